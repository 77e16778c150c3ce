"""The install pipeline behind install, lock, sync, update and uninstall: lock → plan → prepare → apply.

One run holds the project's file lock, so two strawpot processes on one project serialise. Nothing is
written before every byte to install has been downloaded and verified; then the manifest and the lock
are replaced atomically and each package is swapped in whole.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from strawpot.config_files import Project
from strawpot.install.apply import commit, discard, recover, remove, stage
from strawpot.install.fastcheck import first_step
from strawpot.install.inputs import Inputs, preflight
from strawpot.install.options import Edit, LockMode, Options, TreeMode
from strawpot.install.outcome import Outcome, QuietReporter, Reporter
from strawpot.install.plan import Plan, installed_kinds, make_plan
from strawpot.model.errors import LockOutdated, UsageError
from strawpot.model.fs import file_lock, read_own_text
from strawpot.model.gitignore import ignore_tree
from strawpot.model.ids import package_id
from strawpot.model.installed import InstalledTree
from strawpot.model.kinds import Kind
from strawpot.model.layout import remove_empty_tree
from strawpot.model.lockfile import Lockfile
from strawpot.model.manifest import Manifest
from strawpot.model.plural import noun
from valueclass import replace

if TYPE_CHECKING:
    from hub_client import HubClient
    from strawpot.install.apply import Staged
    from strawpot.install.background import Speculator
    from strawpot.install.build import Builder, ScriptSettings
    from strawpot.install.prepare import Prepared
    from strawpot.install.resolve import Resolution
    from strawpot.install.trust import TrustPolicy
    from strawpot.model.child_env import EnvPolicy
    from strawpot.model.lockfile import LockedPackage
    from strawpot.model.settings import Settings
    from strawpot.registry_choice import Registry


def run(
    project: Project,
    edit: Edit | None = None,
    options: Options | None = None,
    *,
    reporter: Reporter | None = None,
    client: HubClient | None = None,
) -> Outcome:
    """Run one install-family operation on `project` (raises StrawpotError subclasses)."""
    options = options or Options()
    if (current := first_step(project, edit, options)) is not None:
        return Outcome(project, lock=Lockfile.load(project.lock_path), unchanged=current, dry_run=options.dry_run)
    operation = _Run(project, edit or Edit(), options, reporter or QuietReporter(), client)
    operation.inputs = preflight(project, operation.options)
    fresh_tree = not project.tree_root.exists()
    try:
        with file_lock(project.lock_file_path) if operation.options.writes else contextlib.nullcontext():
            try:
                outcome = operation.execute()
            finally:
                operation.close()
    except BaseException:
        if fresh_tree:
            remove_empty_tree(project)  # a failed first install leaves no `.strawpot/` behind
        raise
    if fresh_tree and not project.is_global and project.tree_root.is_dir():
        outcome.gitignored = ignore_tree(project.dir)  # run state never shows in `git status`
    return outcome


class _Run:
    def __init__(
        self, project: Project, edit: Edit, options: Options, reporter: Reporter, client: HubClient | None
    ) -> None:
        self.project, self.edit, self.options, self.reporter = project, edit, options, reporter
        self.tree = InstalledTree(project.tree_root)
        self.outcome = Outcome(project, dry_run=options.dry_run)
        self._client = client
        self._own_client = client is None
        self.url = ""
        self.registry: Registry | None = None
        self._settings: Settings | None = None
        self.fetched: dict[tuple[str, str], dict[str, bytes]] = {}
        self._placeholders: set[tuple[Kind, str]] = set()
        self.speculator: Speculator | None = None
        self.inputs: Inputs | None = None

    # -- the pipeline -----------------------------------------------------------------------------

    def execute(self) -> Outcome:
        opts = self.options
        if opts.touches_tree:
            recover(self.tree)
        assert self.inputs is not None
        manifest, previous = self.inputs.current(self.project)
        self.registry = self._registry(previous)
        self.url = self.registry.url
        from strawpot.hub import hub_errors

        with hub_errors(self.url, from_lock=self.registry.origin == "lock"):
            lock = self._lock(manifest, previous)
            self.outcome.lock = lock
            if opts.tree is TreeMode.NONE or opts.lock is LockMode.CHECK:
                if opts.writes and opts.save and self.outcome.lock_changed:
                    lock.write(self.project.lock_path)
                    self.outcome.lock_written = True
                return self.outcome
            plan = make_plan(self.tree, lock, previous=previous, remove_extras=opts.tree is TreeMode.EXACT)
            self.outcome.changes = list(plan.changes)
            self.outcome.unchanged = plan.unchanged
            from strawpot.install.build import script_settings

            settings = script_settings(self.settings)
            builder = self._builder(settings, lock)
            rebuild = self._pending_builds(plan, lock, builder)
            if opts.dry_run:
                self._dry_run_scripts(plan, rebuild, builder.trust)
            else:
                self._apply(plan, lock, manifest, builder, rebuild)
            self._warn_unknown_trust(settings, lock)
        if opts.tools != "skip":
            self._tools(lock, builder.trust)
        return self.outcome

    @property
    def settings(self) -> Settings:
        """The settings layer, read once a run (the registry, its time limits, install scripts)."""
        if self._settings is None:
            from strawpot.config_files import load_settings

            self._settings = load_settings(self.project, {"registry.url": ("--registry", self.options.registry)})
        return self._settings

    @property
    def cooldown(self) -> tuple[str, float]:
        """`[install] min_release_age` as written ("" when not set) and in seconds."""
        from strawpot.install.cooldown import cooldown

        return cooldown(self.settings)

    @property
    def env_policy(self) -> EnvPolicy:
        """What install scripts and tool hints inherit (an allow-list; never a token)."""
        from strawpot.config_files import env_policy

        return env_policy(self.settings)

    def _registry(self, previous: Lockfile | None) -> Registry:
        """--registry > STRAWPOT_REGISTRY_URL > [registry].url > config file > where the lock came from > default."""
        from strawpot.install.local import is_path_source
        from strawpot.registry_choice import choose_registry

        sources = [p.source for p in previous.packages if not is_path_source(p)] if previous is not None else []
        lock_source = sources[0] if sources else None
        return choose_registry(self.project, lock_source=lock_source or None, settings=self.settings)

    @property
    def client(self) -> HubClient:
        if self._client is None:
            from strawpot.hub import open_client

            assert self.registry is not None
            self._client = open_client(self.registry, offline=self.options.offline)
            self._client.on_rate_limit = self.reporter.status  # a 429 is waited out, and said once
        return self._client

    def close(self) -> None:
        if self.speculator is not None:
            self.speculator.settle(timeout=0)
        if self._own_client and self._client is not None:
            self._client.close()

    # -- locking ----------------------------------------------------------------------------------

    def _lock(self, manifest: Manifest | None, previous: Lockfile | None) -> Lockfile:
        if manifest is None:  # --frozen
            if previous is None:
                raise UsageError(f"{self.project.lock_path}: no lockfile to install with --frozen",
                                 hint="run `strawpot lock` first")
            if self.edit.any:
                raise UsageError("--frozen installs the lock as it is; it cannot add, remove or update packages")
            return previous
        self._edit_manifest(manifest, previous)
        stale = (
            previous is None
            or previous.manifest_hash != manifest.dependency_hash()
            or previous.min_release_age != self.cooldown[0]
            or self.edit.upgrade_all
            or bool(self.edit.upgrade)
        )
        self.outcome.stale = stale
        if stale and previous is not None and previous.manifest_hash == manifest.dependency_hash():
            from strawpot.install.cooldown import cooldown_change

            self.outcome.stale_because = cooldown_change(previous, self.settings)
        if not stale:
            assert previous is not None
            return previous
        if self.options.lock in (LockMode.LOCKED, LockMode.CHECK):
            if self.options.lock is LockMode.CHECK:
                return previous or Lockfile((), "")
            from strawpot.install.local import changed_path_sources

            changed = changed_path_sources(self.project.dir, previous) if previous else []
            because = f" ({noun(len(changed), 'path source')} changed since: {', '.join(changed)})" if changed else ""
            because = self.outcome.stale_because or because
            raise LockOutdated(
                f"{self.project.lock_path} is out of date with {self.project.manifest_path.name}{because}"
                if previous else f"{self.project.lock_path} does not exist",
                hint="run `strawpot lock` (or install without --locked) and commit the result",
            )
        from strawpot.install.source_moves import source_moves

        lock = self._resolve(manifest, previous)
        self.outcome.resolved = True
        for kind, name in self.edit.remove:  # removed from strawpot.toml, kept because something needs it
            if lock.get(kind, name) is not None:
                needs = [f"{p.kind.value} {p.name}" for p in lock.packages
                         if any(d.kind is kind and d.name == name for d in p.dependencies)]
                why = f": required by {', '.join(needs)}" if needs else ""
                self.outcome.warnings.append(f"{kind.value} {name} stays installed{why}")
        self.outcome.lock_changed = previous is None or previous.dumps() != lock.dumps()
        self.outcome.moved = source_moves(previous, lock)
        return lock

    def _edit_manifest(self, manifest: Manifest, previous: Lockfile | None) -> None:
        for kind, name in self.edit.remove:
            if (entry := manifest.get(kind, name)) is None:
                raise UsageError(self._not_direct(kind, name, previous))
            manifest.remove(kind, name)
            self.outcome.dropped.append((kind, name, entry.spec))
        for req in self.edit.add:
            if req.spec is not None:
                if (before := manifest.get(req.kind, req.name)) is not None:
                    self.outcome.previous_specs[(req.kind, req.name)] = before.spec
                manifest.set_spec(req.kind, req.name, req.spec)
                self.outcome.saved.append((req.kind, req.name, req.spec))
            elif manifest.get(req.kind, req.name) is None:
                manifest.set_spec(req.kind, req.name, "*")  # becomes ^X.Y.Z once resolved
                self._placeholders.add((req.kind, req.name))

    def _not_direct(self, kind: Kind, name: str, previous: Lockfile | None) -> str:
        if previous is not None and previous.get(kind, name) is not None:
            parents = [
                f"{p.kind.value} {p.name}" for p in previous.packages
                if any(d.kind is kind and d.name == name for d in p.dependencies)
            ]
            via = f"; it is required by {', '.join(parents)}" if parents else ""
            return f"{kind.value} {name} is not in {self.project.manifest_path.name}{via}"
        return f"{kind.value} {name} is not installed in {self.project.dir}"

    def _resolve(self, manifest: Manifest, previous: Lockfile | None) -> Lockfile:
        from strawpot.install.resolve import locked_preferences, resolve

        unlock = set(self.edit.upgrade) | {package_id(k, n) for k, n in self._placeholders}
        prefs = {} if self.edit.upgrade_all else locked_preferences(previous, unlock)
        self.reporter.status("Resolving from the cache (offline)" if self.options.offline
                             else f"Resolving against {self.url}")
        role_agents = {
            e.name: agent for e in manifest.entries()
            if e.kind is Kind.ROLE and isinstance(agent := e.settings.get("default_agent"), str)
        }
        limit = self.client.retry.deadline
        with self.reporter.waiting(f"waiting for {self.url}" + (f" (at most {limit:g} s a request)" if limit else "")):
            from strawpot.install.local import local_packages

            resolution = resolve(
                self.client, manifest.entries(), source=self.url, manifest_hash="", role_agents=role_agents,
                preferences=prefs, where=str(manifest.path), speculate=self._speculator(),
                local=local_packages(self.project.dir, manifest), previous=previous, min_age=self.cooldown[1],
            )
        self.fetched = resolution.fetched
        self.outcome.too_young = resolution.skipped
        resolution.lock = self._provenance(resolution, previous)
        for kind, name in sorted(self._placeholders):
            pkg = resolution.lock.get(kind, name)
            if pkg is not None:
                manifest.set_spec(kind, name, f"^{pkg.version}")
                self.outcome.saved.append((kind, name, f"^{pkg.version}"))
        return replace(resolution.lock, manifest_hash=manifest.dependency_hash(),
                                   trust=previous.trust if previous is not None else (),
                                   min_release_age=self.cooldown[0])

    def _provenance(self, resolution: Resolution, previous: Lockfile | None) -> Lockfile:
        """Signers and log indexes checked against the registry's log, or offline against what was kept of it
        (strawpot/install/provenance.py); a signer's key rotation is a warning."""
        from strawpot.install.provenance import check_resolution

        ahead = self.speculator.ahead if self.speculator is not None else None
        lock, rotations = check_resolution(self.client, self.url, resolution, previous, self.settings, ahead)
        self.outcome.warnings.extend(rotations)
        return lock

    def _speculator(self) -> Speculator | None:
        """Archive downloads that start while resolving (not for lock-only, dry or offline runs)."""
        if self.options.offline or not self.options.touches_tree:
            return None
        from strawpot.install.background import Speculator

        tree, present = self.tree, installed_kinds(self.tree)  # the tree is ours until the run ends (file lock)

        def wanted(kind: str, name: str, version: str) -> bool:
            return Kind(kind) not in present or tree.installed_version(Kind(kind), name) != version

        self.speculator = Speculator(self.client, wanted)
        return self.speculator

    # -- applying ---------------------------------------------------------------------------------

    def _apply(
        self, plan: Plan, lock: Lockfile, manifest: Manifest | None, builder: Builder, rebuild: list[LockedPackage]
    ) -> None:
        prepared = []
        if self.speculator is not None:
            self.speculator.settle()
        wanted = [*plan.install, *rebuild]
        if wanted:
            with self.reporter.progress("Downloading", len(wanted)) as advance:
                from strawpot.install.prepare import prepare

                prepared = prepare(self.client, wanted, fetched=self.fetched, progress=advance,
                                   project_dir=self.project.dir)
        from strawpot.install.background import DownloadCounter
        from strawpot.install.local import is_path_source

        # an archive GET counts itself; a path source is never downloaded; counted while the tree is written
        loose = [p for p in plan.install if not p.archive_sha256 and not is_path_source(p)]
        counter = DownloadCounter(self.client, loose) if loose and not self.options.offline else None
        staged = stage(self.tree, prepared, self.options.faults)
        try:
            staged = self._build(prepared, staged, builder, {p.key for p in rebuild})
            lock = self._pin_trust(lock, builder.trust)
            trusted_now = builder.builds.trusted_now
            if trusted_now and self.options.save:
                manifest = self._record_trust(manifest, trusted_now)
            if self.options.save and manifest is not None and (self.edit.add or self.edit.remove or trusted_now):
                manifest.save()
                self.outcome.manifest_written = True
                self.options.faults.checkpoint()
            if self.options.save and self.outcome.lock_changed:
                lock.write(self.project.lock_path)
                self.outcome.lock_written = True
                self.options.faults.checkpoint()
            commit(staged, self.options.faults)
        except BaseException:
            discard(staged)
            raise
        remove(self.tree, list(plan.remove), self.options.faults)
        if not self.outcome.lock_changed or self.outcome.lock_written:  # the lock on disk is `lock`
            from strawpot.install.build import scripted_packages, written_mains
            from strawpot.install.fastcheck import write_index

            scripted = scripted_packages(self.tree, lock, written_mains(prepared, staged, builder.builds))
            write_index(self.tree.root, self.project, lock, scripted)
        if counter is not None:
            counter.finish()

    # -- install scripts --------------------------------------------------------------------------

    def _builder(self, settings: ScriptSettings, lock: Lockfile) -> Builder:
        from strawpot.install.build import Builder
        from strawpot.install.trust import trust_policy

        trust = trust_policy(self.project, self.tree, settings.trusted, lock, trust_project=self.options.trust_project,
                             trust_now=self.options.trust_now)
        confirm = getattr(self.reporter, "confirm_script", None) or (lambda script: False)  # cannot ask: never trusts
        return Builder(self.tree.root, trust, timeout=settings.timeout, ignore=self.options.scripts == "ignore",
                       confirm=confirm, echo=self.reporter.status, env_policy=self.env_policy,
                       sandbox=settings.sandbox,
                       running=getattr(self.reporter, "running", None) or (lambda message: contextlib.nullcontext()))

    def _pin_trust(self, lock: Lockfile, trust: TrustPolicy) -> Lockfile:
        """`lock` with the texts trusted in this run pinned (not under --frozen: that lock is not written), and
        the scripts skipped as changed or unconfirmed said in one warning each."""
        from strawpot.install.trust import skipped_warnings

        self.outcome.warnings += skipped_warnings(self.outcome.builds, trust)
        pinned = trust.pinned_lock(lock)
        if self.options.lock is LockMode.FROZEN or pinned == lock:
            return lock
        self.outcome.lock_changed = True
        return pinned

    def _write_pins(self, lock: Lockfile) -> None:
        """Write `lock` (the installed one, with more trust pins) if the file on disk differs from it."""
        try:
            if read_own_text(self.project.lock_path) != lock.dumps():
                lock.write(self.project.lock_path)
        except (OSError, UnicodeDecodeError):
            return  # no lock file: nothing to pin in

    def _pending_builds(self, plan: Plan, lock: Lockfile, builder: Builder) -> list[LockedPackage]:
        from strawpot.install.build import forced_builds, pending_builds

        reinstalled = {p.key for p in plan.install}
        pending = pending_builds(self.tree, lock, reinstalled, builder, dry_run=self.options.dry_run)
        forced = forced_builds(self.tree, lock, self.options.rebuild, builder, dry_run=self.options.dry_run)
        return pending + [p for p in forced if p.key not in reinstalled and p not in pending]

    def _build(
        self, prepared: list[Prepared], staged: list[Staged], builder: Builder, rebuild: set[tuple[Kind, str]]
    ) -> list[Staged]:
        from strawpot.install.build import build_staged

        keep = build_staged(prepared, staged, builder, rebuild)
        self.outcome.builds = builder.builds
        return keep

    def _record_trust(self, manifest: Manifest | None, ids: list[str]) -> Manifest:
        """Add what the user trusted on the terminal to [scripts] trusted (format-preserving)."""
        target = manifest if manifest is not None else Manifest.load(self.project.manifest_path)
        target.trust(ids)
        return target

    def _dry_run_scripts(self, plan: Plan, rebuild: list[LockedPackage], trust: TrustPolicy) -> None:
        from strawpot.install.build import dry_run_scripts

        if self.options.scripts == "run":
            dry_run_scripts(self.client, self.tree, [*plan.install], rebuild,
                            lambda pkg, text: trust.verdict(package_id(pkg.kind, pkg.name), text, pkg.files,
                                                            pkg.version) is None,
                            self.outcome.builds)

    def _warn_unknown_trust(self, settings: ScriptSettings, lock: Lockfile) -> None:
        locked = {package_id(p.kind, p.name) for p in lock.packages}
        self.outcome.warnings += [
            f"{self.project.manifest_path.name}: [scripts] trusted names {pid}, which is not installed"
            for pid in sorted(settings.trusted - locked)
        ]

    def _tools(self, lock: Lockfile, trust: TrustPolicy) -> None:
        """Missing tools; their install hints run only when trusted and asked for (or the user says yes)."""
        from strawpot.install.tools import install_missing, missing_tools

        missing = missing_tools(lock)
        if missing and not self.options.dry_run:
            ask = getattr(self.reporter, "confirm_tool", None) or (lambda item: False)
            done = install_missing(missing, self.tree.root, trust, lock, run=self.options.tools == "run", ask=ask,
                                   echo=self.reporter.status, env_policy=self.env_policy)
            missing, self.outcome.tool_hints_ran = done.missing, done.ran
            self.outcome.warnings += done.warnings
            if done.ran and self.options.save and self.options.lock is not LockMode.FROZEN:
                self._write_pins(trust.pinned_lock(lock))
        self.outcome.missing_tools = missing
