"""Build: run the install scripts of staged packages the user trusted, and record what they made.

It runs after every package is verified and written to its temp dir, before anything is swapped in:
a script that fails leaves every package at its previous version. Whether a script's exact text may run is
`strawpot.install.trust`'s answer, or, on a terminal, the user's yes (recorded); `-y` never implies it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox.walls import SandboxSettings, scripts_sandbox
from strawpot.install.apply import Staged, discard
from strawpot.model.fs import atomic_write
from strawpot.model.ids import package_id
from strawpot.model.install_record import make_record, snapshot
from strawpot.model.installed import InstalledTree
from strawpot.model.kinds import Kind
from strawpot.model.lockfile import LockedPackage, Lockfile
from strawpot.model.platform import current_os
from strawpot.model.tree_facts import RECORD_FILE, unverified_dirs
from valueclass import Record, State, field, replace

if TYPE_CHECKING:
    from hub_client import HubClient
    from strawpot.install.prepare import Prepared
    from strawpot.install.trust import TrustPolicy
    from strawpot.install.trust_diff import FileChange
    from strawpot.model.child_env import EnvPolicy
    from strawpot.model.settings import Settings


class ScriptSettings(Record):
    """`scripts.trusted` (package ids such as `agent:slug`) and `scripts.timeout`, from the settings layer."""

    trusted: frozenset[str]
    timeout: float
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)  # [scripts] sandbox and network


def script_settings(settings: Settings) -> ScriptSettings:
    """`scripts.trusted`, `scripts.timeout` and the sandbox (read under --frozen too: trust is a setting)."""
    return ScriptSettings(frozenset(settings.get("scripts.trusted")), settings.get("scripts.timeout"),
                          scripts_sandbox(settings))


class Script(Record):
    """A package's install script for this OS, read from its verified main file, and the program it must
    build (`metadata.strawpot.bin` for this OS, if any)."""

    pkg: LockedPackage
    text: str
    reason: str = "untrusted"  # why it is asked about: untrusted, changed, old-pin or unconfirmed
    previous: str | None = None  # changed: the installed version's command, when it differs
    bin: str | None = None
    changes: tuple[FileChange, ...] = ()  # changed or old-pin: the shipped files that differ from the installed ones
    since: str | None = None  # changed: what differs from what this machine trusted ("since the trusted 1.0.0: ...")

    @property
    def id(self) -> str:
        return package_id(self.pkg.kind, self.pkg.name)

    @property
    def what(self) -> str:
        return f"{self.pkg.kind.value} {self.pkg.name} {self.pkg.version}"


class Builds(State):
    """What happened to install scripts in one run (ids such as "agent:x")."""

    _fields = ("ran", "skipped", "trusted_now", "would_run", "would_skip")

    def __init__(self, ran: list[str] | None = None, skipped: list[str] | None = None,
                 trusted_now: list[str] | None = None, would_run: list[tuple[str, str]] | None = None,
                 would_skip: list[tuple[str, str]] | None = None) -> None:
        self.ran = [] if ran is None else ran
        self.skipped = [] if skipped is None else skipped  # untrusted: `strawpot trust` runs them
        self.trusted_now = [] if trusted_now is None else trusted_now  # the user said yes on the terminal
        self.would_run = [] if would_run is None else would_run  # --dry-run: (id, script)
        self.would_skip = [] if would_skip is None else would_skip

    def as_dict(self) -> dict[str, object]:
        return {
            "ran": self.ran, "skipped": self.skipped, "trusted": self.trusted_now,
            "would_run": [{"id": i, "script": s} for i, s in self.would_run],
            "would_skip": [{"id": i, "script": s} for i, s in self.would_skip],
        }


def script_in(kind: Kind, files: Mapping[str, bytes]) -> str | None:
    """The install command for this OS in a package's main file, if any (a file that does not parse has none:
    nothing runs, and `verify`/`start` report the package)."""
    found = _build_spec(kind, files)
    return found[0] if found else None


def _build_spec(kind: Kind, files: Mapping[str, bytes]) -> tuple[str, str | None] | None:
    """(install command, bin) for this OS from a package's main file, when it has an install command."""
    data = files.get(kind.main_file)
    if data is None or b"install" not in data:  # most packages: no YAML to parse (nor the YAML library to import)
        return None
    from strawpot.model.frontmatter import FrontmatterError, split_frontmatter
    from strawpot.model.package import declared_bins, install_commands

    try:
        meta, _body = split_frontmatter(data.decode("utf-8"))
    except (UnicodeDecodeError, FrontmatterError):
        return None
    text = install_commands(meta).get(current_os())
    return None if text is None else (text, declared_bins(meta).get(current_os()))


def script_of(pkg: LockedPackage, files: Mapping[str, bytes]) -> Script | None:
    """The Script of a package whose main file is in `files`, if it has one for this OS."""
    found = _build_spec(pkg.kind, files)
    return Script(pkg, found[0], bin=found[1]) if found else None


def installed_script(package_dir: Path, kind: Kind) -> str | None:
    data = _installed_main(package_dir, kind)
    return None if data is None else script_in(kind, {kind.main_file: data})


def _installed_spec(package_dir: Path, pkg: LockedPackage) -> Script | None:
    data = _installed_main(package_dir, pkg.kind)
    return None if data is None else script_of(pkg, {pkg.kind.main_file: data})


def _installed_main(package_dir: Path, kind: Kind) -> bytes | None:
    """The installed main file, read as the tree's files are (no link, no FIFO, capped); None if it cannot be."""
    from strawpot.model.fs import read_regular_file
    from strawpot.model.package_limits import MAX_FILE_SIZE

    data, _, unreadable = read_regular_file(package_dir / kind.main_file, MAX_FILE_SIZE)
    return None if unreadable else data


def log_path(tree_root: Path, kind: Kind, name: str) -> Path:
    return tree_root / "logs" / f"install-{kind.value}-{name}.log"


class Builder:
    """Decides, for each staged package with a script, whether it runs; runs it in the staged dir."""

    def __init__(self, tree_root: Path, trust: TrustPolicy, *, timeout: float, ignore: bool,
                 confirm: Callable[[Script], bool], echo: Callable[[str], None],
                 env_policy: EnvPolicy | None = None, sandbox: SandboxSettings | None = None,
                 running: Callable[[str], AbstractContextManager[None]] = lambda message: nullcontext()) -> None:
        self.tree_root, self.trust, self.timeout, self.ignore = tree_root, trust, timeout, ignore
        self.confirm, self.echo, self.env_policy, self.sandbox = confirm, echo, env_policy, sandbox
        self.running = running
        self.builds = Builds()

    def allowed(self, script: Script, staged_dir: Path | None = None) -> bool:
        """Trusted already for this exact text and these files, or the user says yes now (which is recorded).
        `staged_dir` holds the new files, to show how they differ from the installed ones."""
        from strawpot.install.trust import CHANGED, OLD_PIN

        reason = self.trust.verdict(script.id, script.text, script.pkg.files, script.pkg.version)
        if reason is None:
            return True
        installed = self.tree_root / script.pkg.kind.plural / script.pkg.name
        previous = installed_script(installed, script.pkg.kind)
        changes: tuple[FileChange, ...] = ()
        if reason in (CHANGED, OLD_PIN) and staged_dir is not None and installed.is_dir():
            from strawpot.install.trust_diff import file_changes

            changes = file_changes(installed, staged_dir, script.pkg.files)
        since = self.trust.since(script.id, script.text, script.pkg.files) if reason == CHANGED else None
        if self.confirm(replace(script, reason=reason, previous=previous if previous != script.text else None,
                                changes=changes, since=since)):
            self.trust.grant(script.id, [script.text], script.pkg.files, script.pkg.version)
            self.builds.trusted_now.append(script.id)
            return True
        self.builds.skipped.append(script.id)
        self.trust.reasons[script.id] = reason
        return False

    def build(self, staged: Staged, script: Script) -> None:
        """Run the script in the staged folder (INSTALL_DIR: a fresh folder whose files join it after) and
        write its install record; ScriptFailed when it fails or does not build its `bin`."""
        # imported with a script to run: its module brings subprocess
        from strawpot.install.scripts import ScriptRun, run_script

        skip = unverified_dirs(script.pkg.kind.plural)
        shipped = snapshot(staged.tmp, skip)
        log = log_path(self.tree_root, script.pkg.kind, script.pkg.name)
        venv = script.pkg.kind is Kind.INTEGRATION
        self.echo(f"Running the install script of {script.what} (log: {log})")
        try:
            with self.running(f"install script of {script.what} (log: {log})"):
                run_script(ScriptRun(script.what, script.text, log, bin=script.bin, os_name=current_os(),
                                     env_policy=self.env_policy, venv=venv),
                           staged.tmp, timeout=self.timeout, shipped={f.path for f in script.pkg.files},
                           sandbox=self.sandbox)
            if venv:
                from strawpot.install.venv import relocate

                relocate(staged.tmp, staged.tmp, staged.target)
        except KeyboardInterrupt:  # run_script stopped it; the log says so, not just where the output ends
            with contextlib.suppress(OSError), open(log, "a", encoding="utf-8") as fh:
                fh.write("\n[strawpot] aborted (Ctrl-C): the script was stopped; the package was not installed\n")
            raise
        record = make_record(current_os(), script.text, shipped, snapshot(staged.tmp, skip))
        atomic_write(staged.tmp / RECORD_FILE, record.dumps())  # replaces (never follows) whatever the script left
        self.builds.ran.append(script.id)


def pending_builds(
    tree: InstalledTree, lock: Lockfile, reinstalled: set[tuple[Kind, str]], builder: Builder, *, dry_run: bool
) -> list[LockedPackage]:
    """Installed packages whose install script never ran here and may run now (trusted, or the user says
    yes); the untrusted rest are counted as skipped. With --dry-run: every such package, nothing asked."""
    if builder.ignore:
        return []
    pending = []
    for pkg in lock.packages:
        if pkg.key in reinstalled or tree.record(pkg.kind, pkg.name) is not None:
            continue
        base = tree.package_dir(pkg.kind, pkg.name)
        script = _installed_spec(base, pkg)
        if script is None:
            continue
        if dry_run or not _main_file_locked(pkg, base) or builder.allowed(script):
            pending.append(pkg)  # a main file that differs from the lock is restaged; then it is asked about
    return pending


def forced_builds(tree: InstalledTree, lock: Lockfile, wanted: Collection[tuple[Kind, str]], builder: Builder, *,
                  dry_run: bool) -> list[LockedPackage]:
    """`sync --rebuild`: the named packages, reinstalled from the lock and built again whatever their install
    record says. Each must be locked, and its install script (if it has one here) trusted or accepted now."""
    from strawpot.model.errors import StrawpotError, UsageError

    found = []
    for kind, name in sorted(wanted, key=lambda key: (key[0].value, key[1])):
        pkg = lock.get(kind, name)
        if pkg is None:
            raise UsageError(f"{package_id(kind, name)} is not in strawpot.lock, so there is nothing to rebuild",
                             hint=f"install it first: `strawpot install {kind.value} {name}`")
        if builder.ignore:
            raise UsageError("--rebuild runs install scripts; it cannot be used with --ignore-scripts")
        script = _installed_spec(tree.package_dir(kind, name), pkg)
        if script is not None and not dry_run and not builder.allowed(script):
            raise StrawpotError(
                f"the install script of {script.what} is not trusted, so it was not rebuilt",
                hint=f"review it (`strawpot info {kind.value} {name}`), then run `strawpot trust {script.id}`",
            )
        found.append(pkg)
    return found


def _main_file_locked(pkg: LockedPackage, base: Path) -> bool:
    """Whether the installed main file is the locked one (so the script shown is the one that would run)."""
    from strawpot.model.install_record import file_sha256

    locked = next((f for f in pkg.files if f.path == pkg.kind.main_file), None)
    try:
        return locked is not None and file_sha256(base / pkg.kind.main_file) == locked.sha256
    except OSError:
        return False


def build_staged(
    prepared: list[Prepared], staged: list[Staged], builder: Builder, rebuild: set[tuple[Kind, str]]
) -> list[Staged]:
    """Run the scripts that may run in their staged folders; return the staged packages to swap in (a package
    staged only to be built, whose script may not run, is dropped: it stays installed as it is)."""
    keep = []
    for item, place in zip(prepared, staged, strict=True):
        main = item.package.kind.main_file
        script = script_of(item.package, {main: item.files[main][0]}) if main in item.files else None
        if script is None or builder.ignore:
            keep.append(place)
        elif builder.allowed(script, place.tmp):
            builder.build(place, script)
            keep.append(place)
        elif item.package.key not in rebuild:
            keep.append(place)  # installed as published; its script waits for `strawpot trust`
    kept = {id(place) for place in keep}  # by identity: `place not in keep` compared every pair
    discard([place for place in staged if id(place) not in kept])
    return keep


def dry_run_scripts(client: HubClient, tree: InstalledTree, install: list[LockedPackage],
                    rebuild: list[LockedPackage], may_run: Callable[[LockedPackage, str], bool],
                    builds: Builds) -> None:
    """--dry-run: which install scripts would run and which would wait for trust; nothing is written."""
    from strawpot.install.prepare import check_main_file

    found: list[tuple[LockedPackage, str | None]] = []
    for pkg in install:
        data = client.fetch_file(pkg.kind.value, pkg.name, pkg.kind.main_file, pkg.version)
        check_main_file(pkg, data)
        found.append((pkg, script_in(pkg.kind, {pkg.kind.main_file: data})))
    found += [(p, installed_script(tree.package_dir(p.kind, p.name), p.kind)) for p in rebuild]
    for pkg, text in found:
        if text is not None:
            pid = package_id(pkg.kind, pkg.name)
            (builds.would_run if may_run(pkg, text) else builds.would_skip).append((pid, text))


def scripted_packages(tree: InstalledTree, lock: Lockfile,
                      written: Mapping[tuple[Kind, str], bytes] | None = None) -> set[tuple[str, str]]:
    """(plural, name) of the installed packages with an install script for this OS; `written` holds main files this
    run installed and no script ran on since (`written_mains`), read from memory instead of from disk again."""
    known = written or {}
    return {
        (p.kind.plural, p.name) for p in lock.packages
        if (script_in(p.kind, {p.kind.main_file: known[p.key]}) if p.key in known
            else installed_script(tree.package_dir(p.kind, p.name), p.kind)) is not None
    }


def written_mains(prepared: list[Prepared], kept: list[Staged], builds: Builds) -> dict[tuple[Kind, str], bytes]:
    """The main files of the packages swapped in (`kept` by `build_staged`) whose install script did not run: what
    is on disk is what was staged."""
    swapped = {(place.kind, place.name) for place in kept}
    return {item.package.key: item.files[main][0] for item in prepared
            if item.package.key in swapped and (main := item.package.kind.main_file) in item.files
            and package_id(*item.package.key) not in builds.ran}
