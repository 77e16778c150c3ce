"""A cold install walks its 100 packages once at each step: no package is compared with every other (issue 39)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hub_client import VersionInfo
from strawpot.install import provenance
from strawpot.install.apply import Staged
from strawpot.install.build import build_staged
from strawpot.install.prepare import Prepared
from strawpot.model.lockfile import LockedPackage, Lockfile
from strawpot.model.package_types import Kind

REGISTRY = "http://hub.test"


def test_checking_a_lock_of_many_packages_compares_no_two_of_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`verify_lock` asked `pkg in todo` of each package (a list): 4,950 comparisons of whole records for 100
    packages, ~20 ms of a cold install. The network and the checks themselves are stood in for here; what is
    counted is the walk."""
    packages = [LockedPackage(Kind.SKILL, f"s{i:03d}", "1.0.0", REGISTRY, f"{i:064x}", 1) for i in range(60)]
    packages.append(LockedPackage(Kind.SKILL, "unhashed", "1.0.0", REGISTRY, None, None))  # not checked: kept as is
    infos = {("skill", p.name): VersionInfo("1.0.0", log_index=i) for i, p in enumerate(packages)}
    checked: list[str] = []

    def check(url: str, pkg: LockedPackage, info: VersionInfo, *_: Any) -> tuple[None, None, dict[str, Any]]:
        checked.append(pkg.name)
        return None, None, {}

    monkeypatch.setattr(provenance, "_proofs", lambda *_a, **_k: {"head": {}, "size": 1, "entries": []})
    monkeypatch.setattr(provenance, "check_head", lambda *_a: (1, b"\0" * 32, "key"))
    monkeypatch.setattr(provenance, "_check", check)
    compared: list[object] = []
    equal = LockedPackage.__eq__
    monkeypatch.setattr(LockedPackage, "__eq__", lambda self, other: compared.append(other) or equal(self, other))

    lock, notes = provenance.verify_lock(object(), REGISTRY, Lockfile(tuple(packages), "h"),  # type: ignore[arg-type]
                                         infos, None, tmp_path, provenance.Policy())
    assert compared == []
    assert checked == [p.name for p in packages if p.archive_sha256 is not None] and notes == []
    assert [p.log_index for p in lock.packages] == list(range(60)) + [None]


def test_choosing_the_staged_packages_to_keep_compares_no_two_of_them(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`build_staged` dropped what it did not keep by `place not in keep` (a list): 4,950 comparisons for 100."""
    packages = [LockedPackage(Kind.SKILL, f"s{i:03d}", "1.0.0", REGISTRY, f"{i:064x}", 1) for i in range(60)]
    prepared = [Prepared(p, {"SKILL.md": (b"---\nname: x\n---\n", False)}) for p in packages]
    staged = [Staged(p.kind, p.name, tmp_path / f"tmp-{p.name}", tmp_path / p.name) for p in packages]
    for place in staged:
        place.tmp.mkdir()
    compared: list[object] = []
    equal = Staged.__eq__
    monkeypatch.setattr(Staged, "__eq__", lambda self, other: compared.append(other) or equal(self, other))

    kept = build_staged(prepared, staged, object(), set())  # type: ignore[arg-type]  # no script: no builder asked
    assert kept == staged and compared == []
    assert all(place.tmp.is_dir() for place in staged)  # nothing kept was discarded
