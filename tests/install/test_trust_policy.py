"""The trust decision as a table (strawpot/install/trust.py): project list × this machine's consent × lock pins, each
pin covering a command with the files its package ships; pins of the text alone (an older strawpot) are asked again."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from strawpot.install.trust import (
    CHANGED,
    OLD_PIN,
    UNCONFIRMED,
    UNTRUSTED,
    LocalTrust,
    TrustPolicy,
    trust_digest,
)
from strawpot.model.install_record import script_sha256
from strawpot.model.lockfile import LockedFile, LockedTrust, Lockfile

OLD, NEW = "echo old", "echo new"
PID = "agent:x"
FILES = (LockedFile("AGENT.md", "a" * 64, 10), LockedFile("build.sh", "b" * 64, 20))
EDITED = (FILES[0], LockedFile("build.sh", "c" * 64, 20))  # the same command runs another build.sh
CHMOD = (FILES[0], LockedFile("build.sh", "b" * 64, 20, executable=True))
ADDED = (*FILES, LockedFile("helper.sh", "d" * 64, 5))


def pin(text: str, files: tuple[LockedFile, ...] = FILES) -> str:
    return trust_digest(text, files)


@pytest.mark.parametrize(
    ("listed", "confirmed", "pins", "trust_project", "files", "verdict"),
    [
        (False, [pin(NEW)], [pin(NEW)], True, FILES, UNTRUSTED),  # not in [scripts] trusted: nothing else counts
        (True, [pin(NEW)], [], False, FILES, None),  # confirmed here
        (True, [], [], False, FILES, UNCONFIRMED),  # a cloned project's list alone
        (True, [], [pin(NEW)], False, FILES, UNCONFIRMED),  # ... with the lock's pin: still this machine's call
        (True, [], [pin(NEW)], True, FILES, None),  # CI: the project's pin
        (True, [], [], True, FILES, None),  # CI, nothing pinned yet: pinned now
        (True, [], [pin(OLD)], True, FILES, CHANGED),  # CI: a text the lock does not pin
        (True, [pin(OLD)], [pin(OLD)], False, FILES, CHANGED),  # a new version's script
        (True, [pin(OLD)], [], False, FILES, CHANGED),
        (True, [pin(NEW)], [pin(NEW)], False, EDITED, CHANGED),  # the same command, a changed file
        (True, [pin(NEW)], [pin(NEW)], False, ADDED, CHANGED),  # ... an added file
        (True, [pin(NEW)], [pin(NEW)], False, CHMOD, CHANGED),  # ... a file made executable
        (True, [], [pin(NEW)], True, EDITED, CHANGED),  # CI: files the lock's pin does not cover
        (True, [script_sha256(NEW)], [script_sha256(NEW)], False, FILES, OLD_PIN),  # an older strawpot's pins
        (True, [], [script_sha256(NEW)], True, FILES, OLD_PIN),  # ... in CI too
        (True, [script_sha256(OLD)], [], False, FILES, CHANGED),  # an old pin of another text: changed
    ],
)
def test_verdicts(tmp_path: Path, listed: bool, confirmed: list[str], pins: list[str], trust_project: bool,
                  files: tuple[LockedFile, ...], verdict: str | None) -> None:
    local = LocalTrust(tmp_path / "trusted-scripts.json")
    local.confirm(tmp_path, PID, confirmed)
    lock = Lockfile((), "", trust=(LockedTrust(PID, tuple(pins)),) if pins else ())
    policy = TrustPolicy.of(tmp_path, [PID] if listed else [], lock, LocalTrust(local.path), trust_project=trust_project)
    assert policy.verdict(PID, NEW, files) == verdict


def test_the_digest_covers_every_path_hash_and_mode_and_not_the_order() -> None:
    digests = {pin(NEW, files) for files in (FILES, EDITED, CHMOD, ADDED, ())} | {pin(OLD)}
    assert len(digests) == 6
    assert pin(NEW, tuple(reversed(FILES))) == pin(NEW)
    renamed = (FILES[0], LockedFile("build2.sh", "b" * 64, 20))
    assert pin(NEW, renamed) != pin(NEW)


def test_an_unreadable_or_old_local_trust_file_is_no_trust(tmp_path: Path) -> None:
    import json

    path = tmp_path / "trusted-scripts.json"
    old = json.dumps({"version": 1, "projects": {str(tmp_path): {PID: [script_sha256(NEW), 3]}}})
    for text, verdict in (("not json", UNCONFIRMED), ('{"projects": []}', UNCONFIRMED), (old, OLD_PIN),
                          ('{"projects": [1], "contents": 3}', UNCONFIRMED), ("[]", UNCONFIRMED)):
        path.write_text(text)
        assert TrustPolicy.of(tmp_path, [PID], None, LocalTrust(path)).verdict(PID, NEW, FILES) == verdict


def test_consent_is_kept_per_project_folder_and_pinned_in_the_lock(tmp_path: Path) -> None:
    from strawpot.model.kinds import Kind
    from strawpot.model.lockfile import LockedPackage

    local = LocalTrust(tmp_path / "trusted-scripts.json")
    policy = TrustPolicy.of(tmp_path / "a", [PID], None, local)
    policy.grant(PID, [NEW], FILES)
    assert TrustPolicy.of(tmp_path / "a", [PID], None, LocalTrust(local.path)).verdict(PID, NEW, FILES) is None
    assert TrustPolicy.of(tmp_path / "b", [PID], None, LocalTrust(local.path)).verdict(PID, NEW, FILES) == UNCONFIRMED
    lock = Lockfile((LockedPackage(Kind.AGENT, "x", "1.0.0", "", None, None),), "")
    pinned = policy.pinned_lock(lock)
    assert pinned.trust == (LockedTrust(PID, (pin(NEW),)),)
    assert Lockfile.from_dict(tomllib.loads(pinned.dumps())).trust == pinned.trust  # round trip


def test_what_was_trusted_is_kept_to_say_what_changed_since(tmp_path: Path) -> None:
    from strawpot.install.trust_diff import since_trusted

    local = LocalTrust(tmp_path / "trusted-scripts.json")
    TrustPolicy.of(tmp_path, [PID], None, local).grant(PID, [NEW], FILES, "1.0.0")
    [trusted] = LocalTrust(local.path).contents(tmp_path, PID)
    assert (trusted.version, trusted.command) == ("1.0.0", NEW)
    assert since_trusted([trusted], NEW, EDITED) == "since the trusted 1.0.0: build.sh changed"
    assert since_trusted([trusted], OLD, ADDED) == "since the trusted 1.0.0: the command changed, helper.sh added"
    assert since_trusted([trusted], NEW, FILES[:1]) == "since the trusted 1.0.0: build.sh removed"
