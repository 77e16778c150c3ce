"""The worker's side of a remote session: unpack what travelled, check it, run `start --headless`, pack the result."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import socket
import subprocess
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.git import git, git_bytes, snapshot
from orchestrator.run_record import MAX_RECORD_BYTES, SESSION_FILE
from orchestrator.session import TRACE_FILE
from orchestrator.spare_start import fresh
from strawpot.model.agent_files import open_regular
from strawpot.model.archive import tar_stream
from strawpot.model.folders import config_env
from strawpot.model.installed import InstalledTree
from strawpot.model.kinds import Kind
from strawpot.model.layout import LOCK_NAME, TREE_DIR
from strawpot.model.lockfile import Lockfile

Launcher = Callable[[list[str], Path, Mapping[str, str], Path], "subprocess.Popen[bytes]"]  # spare_start.fresh's shape
BASE_REF = "refs/strawpot-remote/base"  # where the worker keeps the session's base commit
WORKER_OWN = ("PATH", "HOME", "TMPDIR", "USER", "LOGNAME", "SHELL")  # the worker's, not the sender's machine's
MAX_LISTED = 5
RECORD_FILE_MAX = 16 * 1024 * 1024  # bytes of one run-folder file brought back at most
RECORD_MAX = 128 * 1024 * 1024  # bytes of the run folder brought back at most
RECORD_ENTRIES = 20_000  # files and folders of the run folder brought back at most
# a run folder's tar stream: its bytes, padded, each entry behind a header and at most three meta headers
RECORD_TAR_BYTES = RECORD_MAX + RECORD_ENTRIES * 5 * 512
STOP_GRACE = 30.0  # seconds the remote `start` has to stop its agents after SIGTERM before it is killed
ORPHANED = 120.0  # seconds without a `progress` call from the machine that sent it before a session is stopped
PROGRESS_MAX = 1024 * 1024  # bytes of trace one `progress` call brings at most


@dataclass(frozen=True)
class Job:
    """What travels to the worker: the base commit (a git bundle), the installed tree and lock, the command line."""

    run_id: str
    bundle: bytes
    tree: bytes  # tar.gz of the installed packages (`.strawpot/<kinds>/`), verified here against the lock
    lock: bytes
    manifest: bytes
    rel: str  # where the project is in the repository ("" at its top)
    args: tuple[str, ...]  # `start` options after --headless --run-id --project (role, task, params, sandbox)
    ref: str = ""  # the bundle's one ref: the session's base commit
    env: dict[str, str] = field(default_factory=dict)  # the allowed environment and the declared variables' values


@dataclass(frozen=True)
class Result:
    """What comes back: the patch from the base to what the agents left, and the run folder's files (tar.gz)."""

    node: str
    host: str
    exit_code: int | None
    refused: str = ""  # why the worker did not start the session (its installed tree does not match the lock)
    patch: bytes = b""
    record: bytes = b""
    error: str = ""  # the remote `start`'s last error line, when it ended before the session began
    left_out: tuple[str, ...] = ()  # files of the run folder too large to bring back (pack_run)
    cancelled: bool = False  # stopped (`strawpot cancel`) before its session began


def pack_tree(root: Path) -> bytes:
    """The installed packages under `root` (`.strawpot`), one folder per kind, as tar.gz bytes (links kept as links)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for kind in Kind:
            if (root / kind.plural).is_dir() and not (root / kind.plural).is_symlink():
                tar.add(root / kind.plural, arcname=kind.plural)
    return buffer.getvalue()


def unpack(data: bytes, target: Path) -> None:
    """tar.gz bytes into `target`; tarfile's `data` filter refuses absolute paths, `..` and links out of it."""
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(target, filter="data")


class NotARunFolder(tarfile.FilterError):
    """A member `pack_run` never sends: a link, or a name that is not a plain relative path."""

    def __init__(self, tarinfo: tarfile.TarInfo, why: str) -> None:
        self.tarinfo = tarinfo
        super().__init__(f"member {tarinfo.name!r} {why}")


def _run_folder_member(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
    """The data filter, after what `tar_stream` has not refused already: links, names as pack_run never writes
    them, an mtime os.utime cannot take."""
    if member.issym() or member.islnk():
        raise NotARunFolder(member, "is a link, and a run folder comes back without links")
    if member.name.startswith("/") or "\0" in member.name or {"", ".", ".."} & set(member.name.split("/")):
        raise NotARunFolder(member, "is not a path within the run folder")  # as pack_run writes: a/b, no ./ or ..
    if not 0 <= member.mtime < 1 << 33:  # os.utime would overflow; NaN fails this too
        member = member.replace(mtime=0, deep=False)
    return tarfile.data_filter(member, path)


def unpack_run_folder(data: bytes, target: Path, aside: Mapping[str, Path]) -> None:
    """A run folder as `pack_run` makes it into `target`, but a member named a key of `aside` into the folder it
    maps to. Every member is refused or taken before one is written: the headers walked and bounded before
    tarfile reads them (sparse files, data behind a folder, a member over RECORD_FILE_MAX refused there), the gzip
    checksum read, then links, names pack_run never writes and more than RECORD_MAX in all refused."""
    target.mkdir(parents=True, exist_ok=True)
    raw = tar_stream(data, max_entries=RECORD_ENTRIES, max_bytes=RECORD_TAR_BYTES, max_member=RECORD_FILE_MAX,
                     whole=True, empty=True)
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
        members = tar.getmembers()
        into: dict[Path, list[tarfile.TarInfo]] = {}
        for member in members:
            folder = aside.get(member.name, target)
            _run_folder_member(member, str(folder))
            into.setdefault(folder, []).append(member)
        if sum(m.size for m in members) > RECORD_MAX:
            raise tarfile.TarError(f"it holds over {RECORD_MAX // (1024 * 1024)} MiB")
        for folder, listed in into.items():
            tar.extractall(folder, members=listed, filter=_run_folder_member)


class RemoteSession:
    """One session on this worker, in a folder of its own; `stop` (from another thread) ends it as Ctrl-C would,
    `progress` reads its trace and record as it runs (and says the machine that sent it is still there)."""

    def __init__(self, node: str, launch: Launcher = fresh) -> None:
        self.node = node
        self._launch = launch
        self._proc: subprocess.Popen[bytes] | None = None
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._folder: Path | None = None  # the run folder, once the project is unpacked
        self._asked = time.monotonic()  # when `progress` was last called

    def run(self, job: Job) -> Result:
        with tempfile.TemporaryDirectory(prefix="strawpot-remote-") as scratch:
            return self._run(job, Path(scratch))

    def _run(self, job: Job, scratch: Path) -> Result:
        repo, bundle = scratch / "repo", scratch / "base.bundle"
        bundle.write_bytes(job.bundle)
        repo.mkdir()
        git(repo, "init", "-q")
        git(repo, "fetch", "-q", str(bundle), f"{job.ref}:{BASE_REF}")
        git(repo, "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", BASE_REF)
        project = repo / job.rel if job.rel else repo
        self._folder = project / TREE_DIR / "sessions" / job.run_id
        unpack(job.tree, project / TREE_DIR)
        (project / LOCK_NAME).write_bytes(job.lock)
        (project / "strawpot.toml").write_bytes(job.manifest)
        exclude = f"{job.rel}/{TREE_DIR}" if job.rel else TREE_DIR
        base_tree = snapshot(repo, exclude)
        mismatches = InstalledTree(project / TREE_DIR).verify(Lockfile.load(project / LOCK_NAME))
        if mismatches:
            listed = "; ".join(str(m) for m in mismatches[:MAX_LISTED])
            more = f" (and {len(mismatches) - MAX_LISTED} more)" if len(mismatches) > MAX_LISTED else ""
            return Result(self.node, socket.gethostname(), None,
                          refused=f"the installed packages it was sent do not match {LOCK_NAME}: {listed}{more}")
        if self._stopped.is_set():
            return Result(self.node, socket.gethostname(), None, cancelled=True)
        code, error = self._start(job, project, scratch)
        if code is None and self._stopped.is_set():
            return Result(self.node, socket.gethostname(), None, cancelled=True)
        new_tree = snapshot(repo, exclude)
        patch = git_patch(repo, base_tree, new_tree)
        record, left_out = pack_run(self._folder)
        return Result(self.node, socket.gethostname(), code, patch=patch, error=error, record=record,
                      left_out=left_out)

    def _start(self, job: Job, project: Path, scratch: Path) -> tuple[int | None, str]:
        """Run the session (`strawpot start --headless`, its own Denden server) to its end: its exit code and
        last error line."""
        config = scratch / "config"  # the worker's own global config never joins in: the run's settings travelled
        config.mkdir()
        env = {**job.env, **{k: os.environ[k] for k in WORKER_OWN if k in os.environ}, **config_env(config)}
        args = ["start", "--headless", "--run-id", job.run_id, "--project", str(project), *job.args]
        with self._lock:
            if self._stopped.is_set():
                return None, "cancelled before it started"
            self._proc = self._launch(args, project, env, scratch / "start.err")
        code = self._wait(self._proc)
        try:
            text = (scratch / "start.err").read_text(encoding="utf-8", errors="replace")
        except OSError:  # a spare that died before it opened it
            text = ""
        errors = [line for line in text.splitlines() if line.startswith("error:")]
        return code, errors[-1].removeprefix("error:").strip() if errors else ""

    def _wait(self, proc: subprocess.Popen[bytes]) -> int | None:
        """The session's exit code; stopped when its sender has not asked for its progress for ORPHANED seconds (that
        `start` was killed, or its machine lost: nobody is left to take the result)."""
        while True:
            try:
                return proc.wait(1.0)
            except subprocess.TimeoutExpired:
                if time.monotonic() - self._asked > ORPHANED:
                    self.stop()

    def progress(self, offset: int) -> tuple[bytes, bytes]:
        """The run's trace from byte `offset` (whole lines, at most PROGRESS_MAX bytes) and its session.json (b""
        before there is one or when it cannot be read); each call tells the session its sender is still there."""
        self._asked = time.monotonic()
        folder = self._folder
        if folder is None:
            return b"", b""
        chunk = record = b""
        with contextlib.suppress(OSError):
            with open_regular(folder / TRACE_FILE) as fh:
                fh.seek(offset)
                chunk = fh.read(PROGRESS_MAX)
            if len(chunk) < PROGRESS_MAX or b"\n" in chunk:  # a line longer than that is passed over, unread
                chunk = chunk[:chunk.rfind(b"\n") + 1]
        with contextlib.suppress(OSError), open_regular(folder / SESSION_FILE) as fh:
            record = fh.read(MAX_RECORD_BYTES + 1)
        return chunk, record if len(record) <= MAX_RECORD_BYTES else b""

    def stop(self) -> bool:
        """End the session as Ctrl-C ends a local one (its agents stopped, its record written); False if none ran."""
        with self._lock:
            self._stopped.set()
            proc = self._proc
        if proc is None or proc.poll() is not None:
            return False
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_GRACE)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        return True


def git_patch(repo: Path, base_tree: str, new_tree: str) -> bytes:
    """The change between two trees as a binary git patch (modes, links, deletions, binary files included)."""
    if base_tree == new_tree:
        return b""
    return git_bytes(repo, "diff", "--binary", "--full-index", "--no-renames", "--no-color", base_tree, new_tree)


def pack_run(folder: Path) -> tuple[bytes, tuple[str, ...]]:
    """The run folder's files and folders (no socket, FIFO or link) as tar.gz bytes (b"" when there is none), the
    record and trace first, and what is left out: a file over RECORD_FILE_MAX, or what comes past RECORD_MAX in
    all, RECORD_ENTRIES entries or RECORD_TAR_BYTES of tar stream (agents write what they like there)."""
    if not folder.is_dir() or folder.is_symlink():
        return b"", ()
    first = [folder / SESSION_FILE, folder / TRACE_FILE]
    buffer, left_out, total, entries = io.BytesIO(), [], 0, 0
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in [*first, *(p for p in sorted(folder.rglob("*")) if p not in first)]:
            if path.is_symlink() or not (path.is_file() or path.is_dir()):
                continue
            name = path.relative_to(folder).as_posix()
            size = path.stat().st_size if path.is_file() else 0
            stream = tar.offset + 512 * (5 + len(name.encode()) // 256) + size  # its headers, a pax one, its data
            if size > RECORD_FILE_MAX or total + size > RECORD_MAX or entries >= RECORD_ENTRIES or \
                    stream > RECORD_TAR_BYTES:
                left_out.append(name)
                continue
            total, entries = total + size, entries + 1
            tar.add(path, arcname=name, recursive=False)
    return buffer.getvalue(), tuple(left_out)
