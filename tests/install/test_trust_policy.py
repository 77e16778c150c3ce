"""The trust decision as a table (strawpot/install/trust.py): project list × this machine's consent × lock pins."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from strawpot.install.trust import CHANGED, UNCONFIRMED, UNTRUSTED, LocalTrust, TrustPolicy
from strawpot.model.install_record import script_sha256
from strawpot.model.lockfile import LockedTrust, Lockfile

OLD, NEW = "echo old", "echo new"
PID = "agent:x"


@pytest.mark.parametrize(
    ("listed", "confirmed", "pins", "trust_project", "text", "verdict"),
    [
        (False, [NEW], [NEW], True, NEW, UNTRUSTED),  # not in [scripts] trusted: nothing else counts
        (True, [NEW], [], False, NEW, None),  # confirmed here
        (True, [], [], False, NEW, UNCONFIRMED),  # a cloned project's list alone
        (True, [], [NEW], False, NEW, UNCONFIRMED),  # ... with the lock's pin: still this machine's call
        (True, [], [NEW], True, NEW, None),  # CI: the project's pin
        (True, [], [], True, NEW, None),  # CI, nothing pinned yet: pinned now
        (True, [], [OLD], True, NEW, CHANGED),  # CI: a text the lock does not pin
        (True, [OLD], [OLD], False, NEW, CHANGED),  # a new version's script
        (True, [OLD], [], False, NEW, CHANGED),
    ],
)
def test_verdicts(tmp_path: Path, listed: bool, confirmed: list[str], pins: list[str], trust_project: bool,
                  text: str, verdict: str | None) -> None:
    local = LocalTrust(tmp_path / "trusted-scripts.json")
    local.confirm(tmp_path, PID, [script_sha256(t) for t in confirmed])
    lock = Lockfile((), "", trust=(LockedTrust(PID, tuple(script_sha256(t) for t in pins)),) if pins else ())
    policy = TrustPolicy.of(tmp_path, [PID] if listed else [], lock, LocalTrust(local.path), trust_project=trust_project)
    assert policy.verdict(PID, text) == verdict


def test_consent_is_kept_per_project_folder_and_pinned_in_the_lock(tmp_path: Path) -> None:
    from strawpot.model.kinds import Kind
    from strawpot.model.lockfile import LockedPackage

    local = LocalTrust(tmp_path / "trusted-scripts.json")
    policy = TrustPolicy.of(tmp_path / "a", [PID], None, local)
    policy.grant(PID, [NEW])
    assert TrustPolicy.of(tmp_path / "a", [PID], None, LocalTrust(local.path)).verdict(PID, NEW) is None
    assert TrustPolicy.of(tmp_path / "b", [PID], None, LocalTrust(local.path)).verdict(PID, NEW) == UNCONFIRMED
    lock = Lockfile((LockedPackage(Kind.AGENT, "x", "1.0.0", "", None, None),), "")
    pinned = policy.pinned_lock(lock)
    assert pinned.trust == (LockedTrust(PID, (script_sha256(NEW),)),)
    assert Lockfile.from_dict(tomllib.loads(pinned.dumps())).trust == pinned.trust  # round trip
