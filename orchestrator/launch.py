"""Check a project is fit to run, then assemble a run: staging, bindings, Denden server, session.

Used by `strawpot start` (and the tests): nothing here spawns an agent until `Launch.start_root`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from orchestrator.ask import Asker
from orchestrator.binding import Binder
from orchestrator.endpoint import default_transport, listen_for, transport_setting
from orchestrator.memory import MemoryStore
from orchestrator.policy import Policy
from orchestrator.run import Finished, LiveAgent, Run
from orchestrator.server import DendenServer
from orchestrator.session import Session
from orchestrator.staging import Stager
from strawpot.model.errors import IntegrityFailure, MissingToolError, UsageError
from strawpot.model.installed import InstalledTree
from strawpot.model.kinds import Kind
from strawpot.model.layout import LOCK_NAME, MANIFEST_NAME, Project
from strawpot.model.lockfile import Lockfile
from strawpot.model.manifest import Manifest

MAX_LISTED = 20


@dataclass
class Prepared:
    """A verified project: what `start` checked before spawning anything."""

    project: Project
    manifest: Manifest
    lock: Lockfile
    stager: Stager
    binder: Binder
    policy: Policy
    role: str
    transport: str = field(default_factory=default_transport)  # how Denden listens ([denden] transport)


def prepare(project: Project, *, role: str | None = None, cli_agent: str | None = None,
            environ: Mapping[str, str] | None = None) -> Prepared:
    """Verify the installed tree against strawpot.lock and every bound agent's tools and env vars."""
    manifest = Manifest.load(project.manifest_path)
    lock = Lockfile.load(project.lock_path)
    tree = InstalledTree(project.tree_root)
    mismatches = tree.verify(lock)
    if mismatches:
        listed = "\n".join(f"  {m}" for m in mismatches[:MAX_LISTED])
        more = f"\n  … and {len(mismatches) - MAX_LISTED} more" if len(mismatches) > MAX_LISTED else ""
        raise IntegrityFailure(
            f"the installed packages do not match {LOCK_NAME}:\n{listed}{more}",
            hint="run `strawpot sync` to reinstall exactly what the lock records",
        )
    try:
        policy = Policy.from_settings(manifest.policy)
    except ValueError as exc:
        raise UsageError(f"{MANIFEST_NAME}: {exc}") from None
    transport = transport_setting(manifest)
    configured = manifest.orchestrator.get("role")
    role = role or (configured if isinstance(configured, str) else None)
    if not role:
        raise UsageError("no role to start", hint="pass --role, or set [orchestrator].role in strawpot.toml")
    if lock.get(Kind.ROLE, role) is None:
        raise UsageError(f"role {role!r} is not installed", hint=f"run `strawpot install role {role}`")
    stager = Stager(tree, lock)
    binder = Binder(stager, manifest, cli_agent=cli_agent, environ=dict(os.environ if environ is None else environ))
    problems = binder.problems(sorted(stager.installed_roles))
    if problems:
        raise MissingToolError("cannot start agents:\n" + "\n".join(f"  {p}" for p in problems),
                               hint="install what is missing, then run `strawpot start` again")
    return Prepared(project, manifest, lock, stager, binder, policy, role, transport=transport)


class Launch:
    """A started Denden server and its run; `close` stops every agent and the server."""

    def __init__(self, prepared: Prepared, *, task: str, asker: Asker,
                 base_env: Mapping[str, str] | None = None) -> None:
        self.prepared = prepared
        project = prepared.project
        session = Session.create(project.sessions_dir, prepared.role, task)
        self.run = Run(
            session=session, stager=prepared.stager, policy=prepared.policy, bind=prepared.binder,
            project_dir=project.dir, asker=asker, memory=MemoryStore(project.memory_dir), base_env=base_env,
        )
        try:
            self.server = DendenServer(self.run, listen_for(prepared.transport, session.directory))
        except OSError:
            session.finish("failed", None)
            raise
        self.run.denden_addr = session.denden_addr = self.server.address
        self.run.denden_token = self.server.token
        session.save()

    @property
    def session(self) -> Session:
        return self.run.session

    def start_root(self, task: str, *, attach: bool = False) -> LiveAgent:
        return self.run.spawn(self.prepared.role, task, None, attach=attach)

    def wait_root(self, root: LiveAgent) -> Finished:
        return self.run.wait(root, None)

    def close(self, state: str, exit_code: int | None) -> list[str]:
        stopped = self.run.shutdown()
        self.server.stop()
        self.session.finish(state, exit_code)
        return stopped
