"""Fuzzing the client's readers with seeded hostile inputs: manifests, lockfiles, archives, and
registry answers run through a whole `install`.

No sample may end in anything but the reader's documented error (StrawpotError, ArchiveError), and no
sample may make the client write outside its target folder. Each category runs a fixed number of
samples from a fixed seed (the same samples on any machine, however loaded; 5-12 s a category on an
idle one); a failure names the seed and the sample number to replay. (Frontmatter is fuzzed with
the shared YAML reader's own tests; benchmarks/fuzz_client.py runs all of them 10,000 times.)
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fuzz._corpus import (
    Traceback,
    archive_bytes,
    check_archive,
    check_lockfile,
    check_manifest,
    check_registry_answer,
    lockfile_text,
    manifest_text,
    mutate,
    top_archive,
    versions_answer,
)

# samples per category: a whole `install` per registry answer costs about ten times a manifest's read
SAMPLES = {"manifest": 1500, "lockfile": 1500, "archive": 1500, "registry answer": 600}


def _manifest(rng: random.Random) -> bytes:
    data = manifest_text(rng).encode("utf-8", "surrogatepass")
    return mutate(rng, data) if rng.random() < 0.3 else data


def _lockfile(rng: random.Random) -> bytes:
    data = lockfile_text(rng).encode("utf-8", "surrogatepass")
    return mutate(rng, data) if rng.random() < 0.3 else data


CATEGORIES: dict[str, tuple[Callable[[random.Random], bytes], Callable[[bytes, Path], None]]] = {
    "manifest": (_manifest, check_manifest),
    "lockfile": (_lockfile, check_lockfile),
    "archive": (archive_bytes, check_archive),
    "registry answer": (lambda rng: versions_answer(rng, "top", top_archive()), check_registry_answer),
}


@pytest.mark.parametrize("category", sorted(CATEGORIES))
def test_no_sample_ends_in_a_traceback_or_writes_outside(category: str) -> None:
    make, check = CATEGORIES[category]
    seed = 12
    rng = random.Random(seed)
    for number in range(SAMPLES[category]):
        sample = make(rng)
        with tempfile.TemporaryDirectory() as folder:
            try:
                check(sample, Path(folder))
            except Traceback as exc:
                pytest.fail(f"{category} sample #{number} of seed {seed} ({sample[:200]!r}...):\n{exc}")


# Inputs the fuzzer found, kept as regressions (each ended in a traceback before it was fixed).
def _tar(*names: str) -> bytes:
    from strawpot.model.archive import build_archive

    return build_archive({name: b"x" for name in names})


@pytest.mark.parametrize("sample", [_tar("a", "a/b"), _tar("x/y", "x/y/z/w")], ids=["file-and-folder", "deeper"])
def test_an_archive_with_a_file_that_is_also_a_folder_is_refused(tmp_path: Path, sample: bytes) -> None:
    from strawpot.model.archive import ArchiveError, read_archive

    with pytest.raises(ArchiveError, match="both a file and a folder"):
        read_archive(sample)
    check_archive(sample, tmp_path)


def test_a_member_name_longer_than_a_file_system_allows_is_refused(tmp_path: Path) -> None:
    import gzip
    import io
    import tarfile

    from strawpot.model.archive import ArchiveError, read_archive

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("x" * 300)
        info.size = 1
        tar.addfile(info, io.BytesIO(b"1"))
    with pytest.raises(ArchiveError, match="longer than 255 bytes"):
        read_archive(gzip.compress(raw.getvalue()))


@pytest.mark.parametrize("text", ['[skills]\nb = "^1"\nb = "^2"\n', "a = " + "[" * 5000 + "]" * 5000 + "\n",
                                  '[skills]\na.b = "1"\na = "2"\n', "[a]\n[a]\n", '[skills]\na = "\\uD800"\n'])
def test_manifests_and_locks_that_used_to_end_in_a_traceback(tmp_path: Path, text: str) -> None:
    check_manifest(text.encode(), tmp_path)
    (tmp_path / "strawpot.toml").unlink()
    check_lockfile(text.encode(), tmp_path)
