"""A remote run's folder landing here: the worker's record and trace unpacked aside; what cannot land fails the run."""

from __future__ import annotations

import gzip
import io
import json
import random
import tarfile
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from orchestrator import remote_job, remote_session
from orchestrator.remote_session import Result, pack_run
from orchestrator.run_record import AgentRecord, RunRecord, find_run, read_run
from orchestrator.session import Session, State
from strawpot.model.errors import IntegrityFailure, StrawpotError
from tests._tar_headers import header, pax, with_size


def _remote_folder(root: Path) -> bytes:
    """What a worker sends back: the run folder of a finished run with one agent, its log and trace."""
    remote = Session.create(root, "lead", "fix it", run_id="run1")
    remote.add_agent(AgentRecord(agent_id="lead-1", role="lead", agent="stub", parent=None, depth=0, task="fix it",
                                 workspace=str(remote.agent_dir("lead-1")), state=State.RUNNING))
    remote.agent_dir("lead-1").mkdir(parents=True)
    (remote.agent_dir("lead-1") / "agent.log").write_text("done\n")
    remote.agent_ended("lead-1", State.SUCCEEDED, 0)
    remote.finish(State.SUCCEEDED, 0, "Fixed.")
    record, left_out = pack_run(remote.directory)
    assert not left_out
    return record


@pytest.fixture(autouse=True)
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Where the landing's temporary folder goes (checked empty after each test)."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    assert not list(folder.iterdir()), "the landing left its temporary folder"


Entry = bytes | tuple[bytes, str] | None


def _tar(members: Mapping[str, Entry] | list[tuple[str, Entry]]) -> bytes:
    """A tar.gz of these files, in order and with the names as given: None is a folder, (SYMTYPE or LNKTYPE,
    target) a link."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items() if isinstance(members, Mapping) else members:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o700
                tar.addfile(info)
            elif isinstance(data, tuple):
                info.type, info.linkname = data
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _local(tmp_path: Path) -> Session:
    local = Session.create(tmp_path / "local", "lead", "fix it", run_id="run1")
    local.event("remote_started", node="n1")
    return local


def test_the_local_record_stays_this_runs_while_the_remote_folder_lands(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = _remote_folder(tmp_path / "remote")
    local = Session.create(tmp_path / "local", "lead", "fix it", run_id="run1")
    local.event("remote_started", node="n1")
    seen: list[tuple[str, str]] = []
    read = find_run

    def look_then_read(root: Path, run_id: str) -> RunRecord | None:  # the moment the remote folder has landed
        seen.append((json.loads((local.directory / "session.json").read_text())["state"],
                     (local.directory / "trace.jsonl").read_text()))
        return read(root, run_id)

    monkeypatch.setattr(remote_job, "find_run", look_then_read)
    events: list[str] = []
    remote = remote_job.fill_folder(local, record, lambda kind, _: events.append(kind))
    assert remote is not None and remote.state == State.SUCCEEDED and remote.summary == "Fixed."
    [(state, trace)] = seen
    assert state == "running", "the remote record was written over this run's before this run's was saved"
    assert "remote_started" in trace and "run_finished" not in trace, "the trace was replaced before it was read"
    assert (local.agent_dir("lead-1") / "agent.log").read_text() == "done\n"
    landed = [json.loads(line)["event"] for line in (local.directory / "trace.jsonl").read_text().splitlines()]
    assert "run_finished" not in landed and "agent_staged" in landed and events == landed[1:]
    after = read_run(local.directory.parent, "run1")
    assert after.state == State.RUNNING and [a.agent_id for a in after.agents] == ["lead-1"]
    assert after.agents[0].workspace == str(local.agent_dir("lead-1"))


def test_no_remote_record_lands_nothing_over_this_runs(tmp_path: Path) -> None:
    local = _local(tmp_path)
    before = (local.directory / "session.json").read_bytes(), (local.directory / "trace.jsonl").read_bytes()
    assert remote_job.fill_folder(local, _tar({"agents/lead-1/agent.log": b"done\n"}), None) is None
    assert ((local.directory / "session.json").read_bytes(), (local.directory / "trace.jsonl").read_bytes()) == before


@pytest.mark.parametrize("record", [{"session.json": b"{not json"}, {"session.json/": None}],
                         ids=["not-json", "a-folder"])
def test_a_broken_remote_record_cannot_land_and_leaves_this_runs(tmp_path: Path, record: dict[str, Entry]) -> None:
    local = _local(tmp_path)
    before = (local.directory / "session.json").read_bytes(), (local.directory / "trace.jsonl").read_bytes()
    with pytest.raises(remote_job.CannotLand, match="its session.json is not a run record"):
        remote_job.fill_folder(local, _tar({**record, "trace.jsonl": b'{"event": "x"}\n'}), None)
    assert ((local.directory / "session.json").read_bytes(), (local.directory / "trace.jsonl").read_bytes()) == before


class _Isolator:
    def __init__(self) -> None:
        self.cleaned: list[Any] = []

    def cleanup(self, env: Any, base: Path) -> None:
        self.cleaned.append(base)


WHOLE = _tar({"agents/lead-1/agent.log": b"done\n" * 1000, "session.json": b"{}"})
NOISE = _tar({"agents/lead-1/agent.log": random.Random(1).randbytes(200_000)})  # stored as is: a byte flips alone
OUT = "not a path within the run folder"
CHAIN = (header("././@LongLink", 5, tarfile.GNUTYPE_LONGNAME) + b"name\0".ljust(512, b"\0")) * 3000


def _flipped(data: bytes, at: int, mask: int = 0xFF) -> bytes:
    return data[:at] + bytes([data[at] ^ mask]) + data[at + 1:]


def _nul_in_name() -> bytes:
    """A pax header naming the member with a NUL byte in it."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("x")
        info.pax_headers = {"path": "session.json\x00zz"}
        info.size = 2
        tar.addfile(info, io.BytesIO(b"{}"))
    return buffer.getvalue()


def _sparse() -> bytes:
    """A GNU sparse member whose map makes tarfile copy 20 MiB of what follows into a 10-byte file."""
    block = bytearray(header("agents/a.log", 512, tarfile.GNUTYPE_SPARSE))
    block[257:265] = b"ustar  \0"  # GNU magic
    block[386:398], block[398:410] = b"%011o\0" % 0, b"%011o\0" % (20 * 1024 * 1024)  # the map's one entry
    block[483:495] = b"%011o\0" % 10  # its real size
    block = with_size(bytes(block), 512)
    return gzip.compress(block + b"x" * 512 + header("session.json", 0, tarfile.REGTYPE) + b"\0" * 1024)


@pytest.mark.parametrize("record, said", [
    (b"not a tar.gz", "cannot be unpacked"),
    (WHOLE[:len(WHOLE) // 2], "cannot be unpacked"),  # cut short on its way
    (_tar({"../evil": b"x"}), OUT),
    (_tar({"session.json/x": b"x"}), "Not a directory"),  # under this run's record, which is a file
    (_tar({"d": (tarfile.SYMTYPE, "."), "d/session.json": b"{}"}), "is a link"),  # this run's record, by a link
    (_tar([("x", (tarfile.LNKTYPE, "session.json")), ("x", b"{}")]), "is a link"),  # and written through
    (_tar({"/session.json": b"{}"}), OUT),  # the data filter would strip the / and write it
    (_tar({"//trace.jsonl": b"{}"}), OUT),
    (_tar({"../run1/session.json": b"{}"}), OUT),  # the data filter finds it inside the folder
    (_tar({"agents/../../run1/trace.jsonl": b"{}"}), OUT),
    (_tar({"./session.json": b"{}"}), OUT),  # pack_run writes no such name
    (_nul_in_name(), OUT),
    (_flipped(NOISE, len(NOISE) // 2), "incorrect data check"),  # tarfile alone reads no checksum
    (_flipped(WHOLE, 10, 1), "cannot be unpacked"),  # the deflate stream itself broken (zlib.error)
    (_tar([("agents/a.log", b"x"), ("d", (tarfile.SYMTYPE, "."))]), "is a link"),  # after a good member
    (_tar([("agents/a.log", b"x"), ("../evil", b"x")]), OUT),
    (gzip.compress(CHAIN + b"\0" * 1024), "meta headers in a row"),  # tarfile would recurse through them
    (gzip.compress(with_size(header("././@LongLink", 0, tarfile.GNUTYPE_LONGNAME), 1 << 62) + b"\0" * 1024),
     "header of"),  # tarfile would read 2**62 bytes at once
    (gzip.compress(with_size(header("d", 0, tarfile.DIRTYPE), -(1 << 40)) + b"\0" * 1024), "negative size"),
    (_sparse(), "a kind this reader refuses"),
    (gzip.compress(header("d", 5 * 512, tarfile.DIRTYPE) + CHAIN[:5 * 512] + b"\0" * 1024), "folder or link of"),
    (gzip.compress(pax(("size", "0")) + pax(("size", "512")) + header("a", 0, tarfile.REGTYPE) + b"\0" * 1024),
     "a kind this reader refuses"),  # two pax headers for one member: tarfile takes the outer size
    (gzip.compress(pax(("GNU.sparse.major", "1"), ("size", "0")) + header("a", 0, tarfile.REGTYPE) + b"\0" * 1024),
     "GNU sparse"),
    (gzip.compress(header("././@PaxHeader", 0, b"X") + header("a", 0, tarfile.REGTYPE) + b"\0" * 1024),
     "a kind this reader refuses"),  # Solaris: read as pax by tarfile
    (gzip.compress(header("././@PaxHeader", 512, tarfile.XHDTYPE) + b"12 size".ljust(512, b"!") + header("a", 0, b"0")
                   + b"\0" * 1024), "cannot parse"),
], ids=["not-a-tar", "truncated", "out-of-the-folder", "under-the-record", "symlink-to-the-folder", "hardlink",
        "absolute", "absolute-trace", "up-and-back", "up-and-back-trace", "dot", "nul", "flipped-byte", "bad-deflate",
        "link-second", "out-second", "meta-chain", "huge-meta", "negative-size", "sparse", "folder-with-data",
        "two-pax", "pax-sparse", "solaris", "bad-pax-record"])
def test_a_run_folder_that_cannot_be_unpacked_fails_the_run_in_one_line_and_this_runs_record_is_untouched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, record: bytes, said: str) -> None:
    local, isolator = _local(tmp_path), _Isolator()
    path = local.directory / "session.json"
    before = path.read_bytes(), path.stat().st_ino
    fail = remote_job.fail

    def untouched_then_fail(*args: Any) -> None:
        assert (path.read_bytes(), path.stat().st_ino) == before, "the archive was written over this run's record"
        fail(*args)

    monkeypatch.setattr(remote_job, "fail", untouched_then_fail)
    with pytest.raises(IntegrityFailure, match=said):
        remote_job.land(local, SimpleNamespace(to_dict=dict), isolator, tmp_path,  # type: ignore[arg-type]
                        Result("n1", "h1", 0, record=record))
    assert isolator.cleaned == [tmp_path] and read_run(tmp_path / "local", "run1").state == State.FAILED
    assert not (tmp_path / "local" / "evil").exists() and not (local.directory / "agents" / "a.log").exists()


def test_a_record_too_large_to_bring_back_fails_the_run_saying_so(tmp_path: Path) -> None:
    local, isolator = _local(tmp_path), _Isolator()
    result = Result("n1", "h1", 0, record=_tar({"agents/lead-1/agent.log": b"done\n"}), left_out=("session.json",))
    with pytest.raises(StrawpotError, match="session.json was too large to bring back"):
        remote_job.land(local, SimpleNamespace(to_dict=dict), isolator, tmp_path, result,  # type: ignore[arg-type]
                        warn=lambda _: None)
    assert read_run(tmp_path / "local", "run1").state == State.FAILED


def test_a_file_an_agent_named_oddly_still_lands(tmp_path: Path) -> None:
    """A backslash, a newline or a leading dot is a name Linux allows: pack_run sends it, and it lands."""
    remote = Session.create(tmp_path / "remote", "lead", "fix it", run_id="run1")
    odd = remote.directory / "agents" / "lead-1" / ".odd\\name\n.txt"
    odd.parent.mkdir(parents=True)
    odd.write_text("kept\n")
    remote.finish(State.SUCCEEDED, 0, "Fixed.")
    record, _ = pack_run(remote.directory)
    local = _local(tmp_path)
    assert remote_job.fill_folder(local, record, None) is not None
    assert (local.directory / "agents" / "lead-1" / ".odd\\name\n.txt").read_text() == "kept\n"


def test_the_gzip_checksum_is_read_to_the_end(tmp_path: Path) -> None:
    """A flipped byte that the tar walk alone would read past: only the gzip trailer's CRC tells."""
    rnd = random.Random(1)
    record = _tar([("agents/a.log", rnd.randbytes(200_000)), ("trace.jsonl", rnd.randbytes(64_216))])
    with pytest.raises(remote_job.CannotLand, match="incorrect data check"):
        remote_job.fill_folder(_local(tmp_path), _flipped(record, len(record) // 3), None)


@pytest.mark.parametrize("bound, files, said", [
    ("RECORD_FILE_MAX", [("agents/a.log", b"x" * 2048)], "over the limit"),
    ("RECORD_MAX", [("agents/a.log", b"x" * 1024), ("agents/b.log", b"x" * 1024)], "holds over"),
])
def test_what_is_over_the_bounds_pack_run_keeps_cannot_land(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bound: str, files: list[tuple[str, Entry]], said: str) -> None:
    monkeypatch.setattr(remote_session, bound, 1536)
    with pytest.raises(remote_job.CannotLand, match=said):
        remote_job.fill_folder(_local(tmp_path), _tar(files), None)


def test_an_mtime_out_of_range_lands_as_0(tmp_path: Path) -> None:
    """A pax mtime of 1e300 made os.utime overflow after files were written."""
    local = _local(tmp_path)
    sent = json.dumps({**json.loads((local.directory / "session.json").read_text()), "summary": "Fixed."}).encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name, data, mtime in [("session.json", sent, 0.0), ("agents/a.log", b"hi\n", 1e300)]:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), mtime
            tar.addfile(info, io.BytesIO(data))
    assert remote_job.fill_folder(local, buffer.getvalue(), None) is not None
    assert (local.directory / "agents" / "a.log").stat().st_mtime == 0


def test_an_empty_run_folder_is_a_session_that_never_began(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    record, _ = pack_run(tmp_path / "empty")
    assert record and remote_job.fill_folder(_local(tmp_path), record, None) is None


def test_a_run_folder_past_the_entry_bound_still_brings_back_its_record_and_trace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The record and trace go first: `agents/…` sorts before them, and a workspace of many files left them out."""
    remote = Session.create(tmp_path / "remote", "lead", "fix it", run_id="run1")
    (remote.directory / "agents").mkdir()
    for i in range(5):
        (remote.directory / "agents" / f"f{i}.js").write_text("x")
    remote.finish(State.SUCCEEDED, 0, "Fixed.")
    monkeypatch.setattr(remote_session, "RECORD_ENTRIES", 3)
    record, left_out = pack_run(remote.directory)
    assert left_out == tuple(f"agents/f{i}.js" for i in range(5))  # the folder took the last place
    landed = remote_job.fill_folder(_local(tmp_path), record, None)
    assert landed is not None and landed.summary == "Fixed."


def test_a_damaged_header_past_the_first_cannot_land_as_a_shorter_folder(tmp_path: Path) -> None:
    raw = bytearray(gzip.decompress(_tar({"session.json": b"{}", "agents/a.log": b"a", "agents/b.log": b"b"})))
    last = raw.rindex(b"agents/b.log") // 512 * 512
    raw[last + 148:last + 156] = b"0000000\0"  # its checksum
    with pytest.raises(remote_job.CannotLand, match="a header tarfile cannot read"):
        remote_job.fill_folder(_local(tmp_path), gzip.compress(bytes(raw)), None)
