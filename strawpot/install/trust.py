"""Trust pinned to content: which install scripts and tool hints may run, and the user's consent on this machine.

A package's commands (its install script and each tool's install hint, for every OS) run only when all hold:

- the project trusts the package: `[scripts] trusted` names it (`strawpot trust`, or yes at a prompt);
- the exact text, with the exact files the package ships, was trusted: its `trust_digest` (the command and every
  file's path, sha256 and executable bit) is among the ones this machine's user confirmed for this project
  (`LOCAL_FILE` in the global config folder, keyed by project path, like direnv's `allow`), or, with
  `--trust-project` / `STRAWPOT_TRUST_PROJECT=1` (CI), among the ones strawpot.lock pins for it (or the lock
  pins none for it yet, and it is pinned now).

A command or a file that differs from every trusted one (a new version changed its script, or the `build.sh` its
unchanged command runs) is a new question: on a terminal the user sees the change and answers; elsewhere it is
skipped with one warning naming `strawpot trust`. A pin written by an older strawpot holds the text's sha256 alone:
it never lets anything run, and the command is asked about again (OLD_PIN).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from strawpot.model.fs import atomic_write, read_regular_file
from strawpot.model.install_record import script_sha256
from strawpot.model.kinds import Kind
from strawpot.model.lockfile import LockedFile, LockedTrust, Lockfile
from strawpot.model.package_limits import MAX_FILE_SIZE
from valueclass import Record, State, replace

if TYPE_CHECKING:
    from strawpot.install.build import Builds
    from strawpot.model.installed import InstalledTree
    from strawpot.model.layout import Project

LOCAL_FILE = "trusted-scripts.json"
UNTRUSTED, CHANGED, UNCONFIRMED, OLD_PIN = "untrusted", "changed", "unconfirmed", "old-pin"


def trust_digest(text: str, files: Iterable[LockedFile]) -> str:
    """What a trust pin holds: the sha256 of a command together with every file its package ships (path, sha256,
    executable bit), so that a changed file behind an unchanged command is a changed trust question."""
    shipped = sorted([f.path, f.sha256, f.executable] for f in files)
    return hashlib.sha256(json.dumps({"command": text, "files": shipped}, ensure_ascii=False).encode()).hexdigest()


def package_commands(kind: Kind, main_file: bytes) -> list[str]:
    """Every command a package's main file gives: its install script and each tool's install hint, on every OS."""
    from strawpot.model.frontmatter import FrontmatterError, split_frontmatter
    from strawpot.model.package import install_commands
    from strawpot.model.package_fields import tool_specs

    try:
        meta, _body = split_frontmatter(main_file.decode("utf-8"))
    except (UnicodeDecodeError, FrontmatterError):
        return []
    commands = list(install_commands(meta).values())
    for spec in tool_specs(meta).values():
        commands += spec.values()
    return commands


class TrustedContent(Record):
    """What one confirmation covered (kept beside its digest, so a later question can say what changed since):
    the package version, the command, and each shipped file's (sha256, executable bit)."""

    version: str
    command: str
    files: dict[str, tuple[str, bool]]

    def as_dict(self) -> dict[str, object]:
        return {"version": self.version, "command": self.command,
                "files": {path: [sha, executable] for path, (sha, executable) in sorted(self.files.items())}}

    @classmethod
    def of(cls, version: str, command: str, files: Iterable[LockedFile]) -> TrustedContent:
        return cls(version, command, {f.path: (f.sha256, f.executable) for f in files})

    @classmethod
    def read(cls, raw: object) -> TrustedContent | None:
        if not isinstance(raw, dict) or not isinstance(raw.get("files"), dict):
            return None
        version, command = raw.get("version"), raw.get("command")
        files = {str(path): (entry[0], entry[1]) for path, entry in raw["files"].items()
                 if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)
                 and isinstance(entry[1], bool)}
        if not isinstance(version, str) or not isinstance(command, str):
            return None
        return cls(version, command, files)


class LocalTrust:
    """This machine's confirmations: {project path: {package id: [sha256, ...]}} in the global config folder, and
    what each sha256 covered (`TrustedContent`; a file written by an older strawpot has none of these)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._data: dict[str, dict[str, list[str]]] | None = None
        self._contents: dict[str, object] = {}  # digest → TrustedContent.as_dict(), as read (checked on use)

    def _load(self) -> dict[str, dict[str, list[str]]]:
        if self._data is None:
            try:
                raw = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                raw = {}
            raw = raw if isinstance(raw, dict) else {}
            projects, contents = raw.get("projects"), raw.get("contents")
            self._data = {
                str(p): {str(i): [h for h in hs if isinstance(h, str)] for i, hs in ids.items() if isinstance(hs, list)}
                for p, ids in (projects if isinstance(projects, dict) else {}).items() if isinstance(ids, dict)
            }
            self._contents = {str(h): c for h, c in contents.items()} if isinstance(contents, dict) else {}
        return self._data

    def hashes(self, project: Path, pid: str) -> frozenset[str]:
        return frozenset(self._load().get(str(project), {}).get(pid, []))

    def contents(self, project: Path, pid: str) -> list[TrustedContent]:
        """What the confirmations of `pid` in `project` covered, as far as recorded (the latest last)."""
        found = [TrustedContent.read(self._contents.get(h)) for h in self._load().get(str(project), {}).get(pid, [])]
        return [c for c in found if c is not None]

    def confirm(self, project: Path, pid: str, hashes: Iterable[str],
                contents: Mapping[str, TrustedContent] | None = None) -> None:
        data = self._load()
        known = data.setdefault(str(project), {}).setdefault(pid, [])
        new = [h for h in hashes if h not in known]
        described = {h: c.as_dict() for h, c in (contents or {}).items() if h not in self._contents}
        if new or described:
            known += new
            self._contents.update(described)
            atomic_write(self.path, json.dumps({"version": 1, "projects": data, "contents": self._contents},
                                               indent=1, sort_keys=True) + "\n", mode=0o600)


class TrustPolicy(State):
    """Answers "may this exact text of this package run?", and records what the user grants."""

    _fields = ("project", "trusted_ids", "lock_pins", "local", "trust_project", "trust_now", "pinned", "reasons")

    def __init__(self, project: Path, trusted_ids: set[str], lock_pins: dict[str, frozenset[str]], local: LocalTrust,
                 trust_project: bool = False, trust_now: frozenset[str] = frozenset()) -> None:
        self.project, self.trusted_ids, self.lock_pins, self.local = project, trusted_ids, lock_pins, local
        self.trust_project = trust_project
        self.trust_now = trust_now  # `strawpot trust ID`: whatever text the package has now
        self.pinned: dict[str, set[str]] = {}  # granted in this run, for strawpot.lock
        self.reasons: dict[str, str] = {}  # package id → why its command did not run

    @classmethod
    def of(cls, project: Path, trusted: Iterable[str], lock: Lockfile | None, local: LocalTrust, *,
           trust_project: bool = False, trust_now: Iterable[str] = ()) -> TrustPolicy:
        pins = {pin.id: frozenset(pin.sha256) for pin in lock.trust} if lock is not None else {}
        return cls(project, set(trusted), pins, local, trust_project, frozenset(trust_now))

    def verdict(self, pid: str, text: str, files: Iterable[LockedFile], version: str = "") -> str | None:
        """None when `text`, run beside the package's `files` (of `version`), may run now; else why not: UNTRUSTED,
        CHANGED, UNCONFIRMED or OLD_PIN."""
        files = tuple(files)
        digest = trust_digest(text, files)
        if pid in self.trust_now:
            self.grant(pid, [text], files, version)
            return None
        if pid not in self.trusted_ids:
            return UNTRUSTED
        confirmed = self.local.hashes(self.project, pid)
        if digest in confirmed or digest in self.pinned.get(pid, ()):
            return None
        pins = self.lock_pins.get(pid, frozenset())
        if self.trust_project and (not pins or digest in pins):
            self.pinned.setdefault(pid, set()).add(digest)
            return None
        legacy = script_sha256(text)  # what a pin of the previous format holds: the text alone
        if legacy in confirmed or (legacy in pins and digest not in pins):
            return OLD_PIN
        return UNCONFIRMED if digest in pins or not (confirmed or pins) else CHANGED

    def grant(self, pid: str, texts: Iterable[str], files: Iterable[LockedFile], version: str = "") -> None:
        """The user trusts these texts of `pid` (at `version`), with these files (on this machine, and pinned in
        strawpot.lock)."""
        files = tuple(files)
        contents = {trust_digest(t, files): TrustedContent.of(version, t, files) for t in texts}
        hashes = list(contents)
        self.trusted_ids.add(pid)
        self.local.confirm(self.project, pid, hashes, contents)
        self.pinned.setdefault(pid, set()).update(hashes)

    def since(self, pid: str, text: str, files: Iterable[LockedFile]) -> str | None:
        """What changed since this machine last trusted `pid` here ("since the trusted 1.0.0: build.sh changed"),
        when what it trusted is recorded."""
        from strawpot.install.trust_diff import since_trusted

        trusted = self.local.contents(self.project, pid)
        return since_trusted(trusted, text, files) if trusted else None

    def pinned_lock(self, lock: Lockfile) -> Lockfile:
        """`lock` with what was granted in this run added to its trust pins (pins of unlocked packages dropped)."""
        from strawpot.model.ids import package_id

        locked = {package_id(p.kind, p.name) for p in lock.packages}
        pins = {pin.id: set(pin.sha256) for pin in lock.trust}
        for pid, hashes in self.pinned.items():
            pins.setdefault(pid, set()).update(hashes)
        trust = tuple(LockedTrust(pid, tuple(sorted(h))) for pid, h in pins.items() if pid in locked and h)
        return replace(lock, trust=trust)


def warning(reason: str, ids: list[str]) -> str:
    """One line for the scripts or hints of `ids` not run for `reason` (CHANGED, OLD_PIN or UNCONFIRMED)."""
    listed, args = ", ".join(ids), " ".join(ids)
    if reason == CHANGED:
        return (f"install scripts not run (changed since you trusted them): {listed}; review the new text "
                f"(`strawpot info KIND SLUG`), then run `strawpot trust {args}`")
    if reason == OLD_PIN:
        return (f"install scripts not run (trusted by an older strawpot, which pinned the command text only, not "
                f"the files it runs): {listed}; review them (`strawpot info KIND SLUG`), then run "
                f"`strawpot trust {args}`")
    return (f"install scripts not run (trusted by strawpot.toml, not yet confirmed on this machine): {listed}; "
            f"review them (`strawpot info KIND SLUG`), then run `strawpot trust {args}` "
            "(in CI: --trust-project or STRAWPOT_TRUST_PROJECT=1)")


def trust_policy(project: Project, tree: InstalledTree, trusted: Iterable[str], lock: Lockfile | None, *,
                 trust_project: bool = False, trust_now: Iterable[str] = ()) -> TrustPolicy:
    """The policy of one run: `[scripts] trusted`, the lock's pins, this machine's confirmations (in the global
    config folder); with `trust_now` (`strawpot trust`), every command of those installed packages is trusted,
    with the files the lock gives them."""
    from strawpot.config_files import config_path

    policy = TrustPolicy.of(project.dir.resolve(), trusted, lock, LocalTrust(config_path().parent / LOCAL_FILE),
                            trust_project=trust_project, trust_now=trust_now)
    for pid in policy.trust_now:
        kind_text, _, name = pid.partition(":")
        kind = Kind(kind_text)
        locked = lock.get(kind, name) if lock is not None else None
        main, _, unreadable = read_regular_file(tree.package_dir(kind, name) / kind.main_file, MAX_FILE_SIZE)
        if unreadable:
            continue
        if locked is not None:
            policy.grant(pid, package_commands(kind, main), locked.files, locked.version)
    return policy


def skipped_warnings(builds: Builds, trust: TrustPolicy) -> list[str]:
    """Take the scripts skipped as changed or unconfirmed out of `builds.skipped` (which says "not trusted"),
    and say each group in one warning."""
    lines = []
    for reason in (CHANGED, OLD_PIN, UNCONFIRMED):
        ids = [pid for pid in builds.skipped if trust.reasons.get(pid) == reason]
        if ids:
            builds.skipped[:] = [pid for pid in builds.skipped if pid not in ids]
            lines.append(warning(reason, ids))
    return lines


def trust_note(project_dir: Path, pid: str, command: str, files: Sequence[LockedFile]) -> str | None:
    """For `strawpot info`: whether `command` with `files` is trusted on this machine in the project at
    `project_dir`, and if another content of the package was, what changed since (None: it never was)."""
    from strawpot.config_files import config_path

    local = LocalTrust(config_path().parent / LOCAL_FILE)
    confirmed = local.hashes(project_dir.resolve(), pid)
    if not confirmed:
        return None
    if trust_digest(command, files) in confirmed:
        return f"trust: this install script, with these files, is confirmed on this machine for {project_dir}"
    why = (TrustPolicy(project_dir.resolve(), set(), {}, local).since(pid, command, files)
           or "an older strawpot pinned the command text only, not the files it runs")
    return f"trust: not trusted in {project_dir}: {why}; review it, then run `strawpot trust {pid}`"
