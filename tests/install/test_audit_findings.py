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
        ("foo", "advisory", "critical", 2), ("foo", "yanked", "high", None),
        ("bar", "unsigned", "low", None), ("foo", "advisory", "low", 1), ("foo", "unsigned", "low", None)]


def test_an_earlier_signers_statement_is_shown_inert_and_an_unreadable_one_said() -> None:
    """The older versions' statements are what the registry serves: quoted as one inert line, never trusted."""
    from hub_client._models import Provenance
    from strawpot.model.lockfile import LockedSigner

    key = "ed25519:" + "a" * 64
    pkg = LockedPackage(Kind.SKILL, "foo", "2.0.0", "http://r", None, None)
    signed = LockedPackage(Kind.SKILL, "foo", "2.0.0", "http://r", None, None, signer=LockedSigner(key, "bob"))
    hostile = Provenance('{"publisher": "\\u001b]0;owned\\u0007mal\\nlory"}', "sig", "ed25519:" + "b" * 64)
    versions = {pkg.key: PackageVersions(Kind.SKILL.value, "foo", (
        VersionInfo("0.9.0", provenance=Provenance("not json", "sig", key)),
        VersionInfo("1.0.0", provenance=hostile), VersionInfo("2.0.0"), VersionInfo("3.0.0", provenance=hostile)))}
    (unsigned,) = audit(Facts((pkg,), versions))
    assert (unsigned.problem, unsigned.severity) == ("unsigned", "high")
    assert "\x1b" not in unsigned.summary and "\x07" not in unsigned.summary
    (changed,) = audit(Facts((signed,), versions))
    assert (changed.problem, changed.severity) == ("signer_changed", "high")
    assert changed.summary.startswith("signed by bob, but 1.0.0 was signed by ") and "\x1b" not in changed.summary
    assert "mal lory" in changed.summary and "\n" not in changed.summary  # the statement was read, one line
    older = {pkg.key: PackageVersions(Kind.SKILL.value, "foo", (
        VersionInfo("1.0.0", provenance=Provenance("not json", "sig", key)), VersionInfo("2.0.0")))}
    (unreadable,) = audit(Facts((pkg,), older))
    assert "1.0.0 was signed by an unreadable statement" in unreadable.summary
