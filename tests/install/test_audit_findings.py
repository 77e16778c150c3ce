"""`strawpot.install.audit`: a registry's advisories answer is untrusted (bad entries are left out and counted, a
wrong shape is refused), and findings come sorted most severe first."""

from __future__ import annotations

import pytest

from hub_client import PackageVersions, VersionInfo
from strawpot.install.audit import Facts, audit, read_advisories
from strawpot.model.kinds import Kind
from strawpot.model.lockfile import LockedPackage

GOOD = {"id": 1, "kind": "skill", "slug": "foo", "range": "<2", "severity": "low", "summary": "a \x1b[31mred\x1b[0m\nline"}


def test_bad_entries_are_left_out_and_counted() -> None:
    no_summary = {k: v for k, v in GOOD.items() if k != "summary"}
    bad = [
        "not an object", {**GOOD, "id": "1"}, {**GOOD, "severity": "urgent"}, {**GOOD, "range": "^^1"},
        {**GOOD, "range": "*"}, {**GOOD, "slug": "../etc"}, {**GOOD, "kind": "gadget"}, no_summary,
    ]
    found, unreadable = read_advisories({"format": 1, "advisories": [GOOD, *bad]})
    assert unreadable == len(bad) and len(found) == 1
    assert found[0].summary == "a red line"  # escape sequences gone, one line


@pytest.mark.parametrize("answer", [None, [], {"advisories": {}}, {"format": 1}])
def test_an_answer_of_the_wrong_shape_is_refused(answer: object) -> None:
    with pytest.raises(ValueError, match="has no 'advisories' list"):
        read_advisories(answer)


def test_findings_come_most_severe_first_and_only_for_the_locked_version() -> None:
    pkg = LockedPackage(Kind.SKILL, "foo", "1.5.0", "http://r", None, None)
    other = LockedPackage(Kind.SKILL, "bar", "3.0.0", "http://r", None, None)
    advice, _ = read_advisories({"advisories": [
        GOOD, {**GOOD, "id": 2, "severity": "critical", "range": ">=1.5.0, <1.6"},
        {**GOOD, "id": 3, "severity": "critical", "range": "<1.5.0"}, {**GOOD, "id": 4, "slug": "bar", "range": "<3"}]})
    versions = {pkg.key: PackageVersions(Kind.SKILL.value, "foo", (VersionInfo("1.5.0", yanked=True),)),
                other.key: PackageVersions(Kind.SKILL.value, "bar", (VersionInfo("3.0.0"),))}
    found = audit(Facts((pkg, other), versions, advice))
    assert [(f.name, f.problem, f.severity, f.advisory_id) for f in found] == [
        ("foo", "advisory", "critical", 2), ("foo", "yanked", "high", None), ("foo", "advisory", "low", 1)]
