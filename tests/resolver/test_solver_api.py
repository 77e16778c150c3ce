"""The solver's public behaviour beyond the scenarios: naming, provider use, locks, edge cases."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

import resolver
from resolver import (
    Candidate,
    Dependency,
    DependencyProvider,
    NoSolution,
    OfflineProvider,
    ResolverError,
    SupportsPrefetch,
    Unavailable,
    Version,
    VersionSolver,
    explain,
    parse_requirement,
    parse_specifier,
    solve,
)
from resolver.report import describe


def deps(**specs: str) -> dict[str, Dependency]:
    return {name: Dependency.parse(name, spec) for name, spec in specs.items()}


def versions(solution: Mapping[str, Version]) -> dict[str, str]:
    return {name: str(v) for name, v in solution.items()}


def test_public_api_is_sorted_and_exported() -> None:
    assert resolver.__all__ == sorted(resolver.__all__)
    for name in resolver.__all__:
        assert hasattr(resolver, name), name


def test_display_name_and_root_name() -> None:
    provider = OfflineProvider(
        {
            "skill:a": {"1.0.0": {"skill:shared": "^1.0"}},
            "role:b": {"1.0.0": {"skill:shared": "^2.0"}},
            "skill:shared": {"1.0.0": {}, "2.0.0": {}},
        }
    )
    with pytest.raises(NoSolution) as info:
        solve(
            provider,
            {"skill:a": Dependency.parse("skill:a"), "role:b": Dependency.parse("role:b")},
            root_name="your project",
            display_name=lambda package: package.replace(":", " "),
        )
    assert explain(info.value) == (
        "Because every version of skill a depends on skill shared ^1.0 and every version of role b depends on "
        "skill shared ^2.0, skill a is incompatible with role b.\n"
        "So, because your project depends on both skill a and role b, version solving failed."
    )
    assert isinstance(info.value, ResolverError)
    assert info.value.incompatibility.is_failure
    leaves = list(info.value.incompatibility.external_incompatibilities())
    assert len(leaves) == 4
    assert {describe(leaf) for leaf in leaves} >= {"every version of skill:a depends on skill:shared ^1.0"}


def test_highest_version_first_and_fewest_versions_first() -> None:
    provider = OfflineProvider(
        {"a": {"1.0.0": {}, "1.1.0": {}, "1.2.0": {}}, "b": {"1.0.0": {"a": "<1.2"}}, "c": {"1.0.0": {}}}
    )
    assert versions(solve(provider, deps(a="^1", b="*", c="*"))) == {"c": "1.0.0", "b": "1.0.0", "a": "1.1.0"}


def test_direct_dependencies_are_decided_before_transitive_ones_and_stay_newest() -> None:
    # c has the fewest versions, so deciding by that alone picks c 2.0 first, and b 5.0 (which needs c 1)
    # then has to give way to b 4.0; a direct dependency is what the user asked for: it stays newest
    versions_of = {f"{n}.0.0": {"c": "*"} for n in range(1, 6)}
    provider = OfflineProvider({
        "a": versions_of,
        "b": {**{f"{n}.0.0": {} for n in range(1, 5)}, "5.0.0": {"c": "<2"}},
        "c": {"1.0.0": {}, "2.0.0": {}},
    })
    assert versions(solve(provider, deps(a="*", b="*"))) == {"a": "5.0.0", "b": "5.0.0", "c": "1.0.0"}


def test_prefetch_is_called_with_new_packages() -> None:
    provider = OfflineProvider(
        {
            "a": {"1.0.0": {"b": "*", "c": "*"}},
            "b": {"1.0.0": {"c": "*"}},
            "c": {"1.0.0": {}},
            "d": {"1.0.0": {}},
        }
    )
    solve(provider, deps(a="*", d="*"))
    assert provider.prefetched == [["a", "d"], ["b", "c"]]
    assert provider.calls["versions"] == 4


class _Minimal:
    """A structural provider without prefetch."""

    def versions(self, package: str) -> Sequence[Candidate] | Unavailable:
        if package == "x":
            return [Candidate(Version(1, 0, 0)), Candidate(Version(2, 0, 0), yanked=True)]
        return Unavailable("registry error: HTTP 500")

    def dependencies(self, package: str, version: Version) -> Mapping[str, Dependency] | Unavailable:
        return {}


def test_provider_without_prefetch() -> None:
    provider = _Minimal()
    assert isinstance(provider, DependencyProvider)
    assert not isinstance(provider, SupportsPrefetch)
    assert isinstance(OfflineProvider(), SupportsPrefetch)
    assert versions(solve(provider, deps(x="*"))) == {"x": "1.0.0"}
    with pytest.raises(NoSolution) as info:
        solve(provider, deps(y="*"))
    assert "which is unavailable (registry error: HTTP 500)" in explain(info.value)


def test_version_with_unavailable_dependencies_is_skipped() -> None:
    class Flaky(OfflineProvider):
        def dependencies(self, package: str, version: Version) -> Mapping[str, Dependency] | Unavailable:
            if (package, str(version)) == ("a", "2.0.0"):
                return Unavailable("metadata download failed")
            return super().dependencies(package, version)

    provider = Flaky({"a": {"1.0.0": {}, "2.0.0": {}}})
    assert versions(solve(provider, deps(a="*"))) == {"a": "1.0.0"}
    with pytest.raises(NoSolution) as info:
        solve(provider, deps(a=">=2"))
    assert explain(info.value) == (
        "Because no versions of a match >2.0.0 (a has 1.0.0, 2.0.0) and a 2.0.0 is unavailable (metadata download failed), "
        "a >=2 is forbidden.\n"
        "So, because root depends on a >=2, version solving failed."
    )


def test_update_one_package_keeps_the_others() -> None:
    provider = OfflineProvider(
        {"a": {"1.0.0": {}, "1.1.0": {}}, "b": {"1.0.0": {}, "1.1.0": {}}, "c": {"1.0.0": {}, "1.1.0": {}}}
    )
    locked = {"a": Version(1, 0, 0), "b": Version(1, 0, 0), "c": Version(1, 0, 0)}
    del locked["b"]  # `strawpot update b`: drop b's preference only
    assert versions(solve(provider, deps(a="^1", b="^1", c="^1"), locked=locked)) == {
        "a": "1.0.0",
        "b": "1.1.0",
        "c": "1.0.0",
    }


def test_locked_prerelease_is_kept() -> None:
    provider = OfflineProvider({"a": {"1.0.0": {}, "1.1.0-rc.1": {}}})
    assert versions(solve(provider, deps(a="^1"))) == {"a": "1.0.0"}
    assert versions(solve(provider, deps(a="^1"), locked={"a": Version.parse("1.1.0-rc.1")})) == {
        "a": "1.1.0-rc.1"
    }


def test_locked_version_that_no_longer_exists_is_ignored() -> None:
    provider = OfflineProvider({"a": {"1.0.0": {}}})
    assert versions(solve(provider, deps(a="*"), locked={"a": Version(9, 9, 9)})) == {"a": "1.0.0"}


def test_self_dependency() -> None:
    provider = OfflineProvider({"a": {"1.0.0": {"a": "^1"}, "2.0.0": {"a": "^1"}}})
    assert versions(solve(provider, deps(a="*"))) == {"a": "1.0.0"}


def test_cycle_resolves() -> None:
    provider = OfflineProvider({"a": {"1.0.0": {"b": "^1"}}, "b": {"1.0.0": {"a": "^1"}}})
    assert versions(solve(provider, deps(a="*"))) == {"a": "1.0.0", "b": "1.0.0"}


def test_empty_root() -> None:
    assert solve(OfflineProvider(), {}) == {}


def test_long_chain_does_not_recurse_too_deep() -> None:
    size = 1500
    packages = {f"p{i}": {"1.0.0": {f"p{i + 1}": "^1"} if i + 1 < size else {}} for i in range(size)}
    assert len(solve(OfflineProvider(packages), deps(p0="*"))) == size


def test_long_failing_chain_reports() -> None:
    size = 300
    packages: dict[str, dict[str, dict[str, str]]] = {
        f"p{i}": {"1.0.0": {f"p{i + 1}": "^1"}} for i in range(size)
    }
    packages[f"p{size}"] = {"2.0.0": {}}
    with pytest.raises(NoSolution) as info:
        solve(OfflineProvider(packages), deps(p0="*"))
    lines = explain(info.value).splitlines()
    assert (
        lines[0]
        == "Because every version of p0 depends on p1 ^1 which depends on p2 ^1, every version of p0 requires p2 ^1."
    )
    assert (
        lines[1]
        == "And because every version of p2 depends on p3 ^1 which depends on p4 ^1, every version of p0 requires p4 ^1."
    )
    assert (
        lines[-1]
        == f"So, because no versions of p{size} match ^1 (p{size} has 2.0.0) and root depends on p0, version solving failed."
    )
    assert len(lines) == size // 2 + 1


def test_attempted_solutions_counts_backtracking() -> None:
    provider = OfflineProvider(
        {
            "a": {"1.0.0": {}, "2.0.0": {"b": "^1"}},
            "b": {"1.0.0": {"a": "^1"}},
        }
    )
    solver = VersionSolver(provider, deps(a=">=1"))
    assert versions(solver.solve()) == {"a": "1.0.0"}
    assert solver.attempted_solutions == 2


def test_dependency_helpers() -> None:
    dep = Dependency.from_requirement(parse_requirement("git-workflow@^1.2"), "skill:git-workflow")
    assert dep == Dependency("skill:git-workflow", parse_specifier("^1.2"), "^1.2", False)
    assert Dependency.from_requirement("x>=1.0.0-rc.1").allows_prerelease
    assert Dependency.parse("x", " ").text == "*"
    assert str(Dependency.parse("x")) == "x" and str(Dependency.parse("x", "^1")) == "x ^1"


def test_offline_provider_scenario_forms() -> None:
    provider = OfflineProvider.from_scenario(
        {
            "packages": {"a": {"1.0.0": {}, "1.1.0": {}}},
            "yanked": [["a", "1.1.0"]],
            "unavailable": {"b": "offline"},
        }
    )
    assert provider.versions("a") == [Candidate(Version(1, 0, 0)), Candidate(Version(1, 1, 0), True)]
    assert provider.versions("b") == Unavailable("offline")
    assert provider.versions("c") == Unavailable("not found")
    assert provider.dependencies("a", Version(2, 0, 0)) == Unavailable("2.0.0 not found")


def test_failure_is_data_until_the_reporter_writes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """pubgrub-rs style: the solver hands back a derivation tree and never renders text itself."""
    import sys

    def no_rendering(*args: object, **kwargs: object) -> str:
        raise AssertionError("the solver rendered its failure")

    monkeypatch.setattr(sys.modules["resolver.report"], "report", no_rendering)
    provider = OfflineProvider({"a": {"1.0.0": {"b": "^2"}}, "b": {"1.0.0": {}}})
    with pytest.raises(NoSolution) as info:
        solve(provider, deps(a="*"), root_name="the project")
    assert info.value.incompatibility.is_failure
    assert info.value.root_name == "the project"
    monkeypatch.undo()
    assert explain(info.value).endswith("version solving failed.")
