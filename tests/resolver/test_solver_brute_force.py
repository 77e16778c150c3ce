"""Random registries: the solver finds a solution exactly when an exhaustive search does, and a valid one."""

from __future__ import annotations

from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from resolver import (
    Dependency,
    NoSolution,
    OfflineProvider,
    Version,
    VersionSet,
    explain,
    parse_specifier,
    solve,
)

PACKAGES = ["a", "b", "c", "d", "e", "f"]
VERSIONS = ["1.0.0", "1.1.0", "2.0.0", "2.1.0", "3.0.0"]
SPECS = ["*", "^1", "^2", ">=1.1", "<2", "==1.0.0", "~2.1", ">=3", "!=1.1.0", "^1 || ^3"]

Registry = dict[str, dict[str, dict[str, str]]]


_DEPENDENCIES = st.dictionaries(
    st.sampled_from([*PACKAGES, *PACKAGES, "ghost"]), st.sampled_from(SPECS), max_size=3
)
_VERSION_LISTS = st.lists(st.sampled_from(VERSIONS), min_size=1, max_size=4, unique=True)
_ROOTS = {
    count: st.dictionaries(st.sampled_from(PACKAGES[:count]), st.sampled_from(SPECS), min_size=1, max_size=3)
    for count in range(2, len(PACKAGES) + 1)
}


@st.composite
def registries(draw: st.DrawFn) -> tuple[Registry, dict[str, str], set[tuple[str, str]]]:
    """Up to six packages of up to four versions, each depending on up to three others (or "ghost")."""
    count = draw(st.integers(2, len(PACKAGES)))
    names = PACKAGES[:count]
    registry: Registry = {}
    for name in names:
        registry[name] = {}
        for version in draw(_VERSION_LISTS):
            dependencies = draw(_DEPENDENCIES)
            # Packages beyond `count` do not exist either; a package never depends on itself.
            registry[name][version] = {d: t for d, t in dependencies.items() if d != name}
    root = draw(_ROOTS[count])
    all_versions = [(n, v) for n, vs in registry.items() for v in vs]
    yanked: set[tuple[str, str]] = set()
    for index in draw(st.lists(st.integers(0, 99), max_size=2)):
        if all_versions:
            yanked.add(all_versions[index % len(all_versions)])
    return registry, root, yanked


def brute_force(
    registry: Registry, root: Mapping[str, str], yanked: set[tuple[str, str]]
) -> dict[str, str] | None:
    """Depth-first search over every version of every required package."""
    specs = {text: parse_specifier(text) for text in SPECS}

    def requirements(selection: dict[str, str]) -> list[tuple[str, VersionSet]]:
        edges = [(name, specs[text]) for name, text in root.items()]
        for name, version in selection.items():
            edges.extend((dep, specs[text]) for dep, text in registry[name][version].items())
        return edges

    def search(selection: dict[str, str]) -> dict[str, str] | None:
        edges = requirements(selection)
        if any(dep in selection and Version.parse(selection[dep]) not in spec for dep, spec in edges):
            return None
        missing = next((dep for dep, _ in edges if dep not in selection), None)
        if missing is None:
            return selection
        for version in registry.get(missing, {}):
            if (missing, version) not in yanked:
                found = search({**selection, missing: version})
                if found is not None:
                    return found
        return None

    return search({})


def check_valid(
    solution: dict[str, Version], registry: Registry, root: Mapping[str, str], yanked: set[tuple[str, str]]
) -> None:
    chosen = {name: str(version) for name, version in solution.items()}
    edges = list(root.items())
    for name, version in chosen.items():
        assert version in registry[name], f"{name} {version} does not exist"
        assert (name, version) not in yanked, f"{name} {version} is yanked"
        edges.extend(registry[name][version].items())
    for dep, text in edges:
        assert dep in chosen, f"{dep} is required but not selected"
        assert Version.parse(chosen[dep]) in parse_specifier(text), f"{dep} {chosen[dep]} violates {text}"
    # Only packages reachable from the root are selected.
    reachable, frontier = set(), list(root)
    while frontier:
        name = frontier.pop()
        if name not in reachable:
            reachable.add(name)
            frontier.extend(registry[name][chosen[name]])
    assert reachable == set(chosen)


@settings(max_examples=200, deadline=None)
@given(registries())
def test_solver_agrees_with_brute_force(case: tuple[Registry, dict[str, str], set[tuple[str, str]]]) -> None:
    registry, root, yanked = case
    provider = OfflineProvider(registry, yanked=yanked)
    dependencies = {name: Dependency.parse(name, text) for name, text in root.items()}
    expected = brute_force(registry, root, yanked)
    try:
        solution = solve(provider, dependencies)
    except NoSolution as exc:
        assert expected is None, f"solver failed but {expected} works:\n{exc}"
        assert exc.incompatibility.is_failure
        assert explain(exc).endswith("version solving failed.")
        return
    assert expected is not None, f"solver returned {solution} but brute force found nothing"
    check_valid(solution, registry, root, yanked)


@settings(max_examples=60, deadline=None)
@given(registries())
def test_locked_versions_are_kept_when_valid(
    case: tuple[Registry, dict[str, str], set[tuple[str, str]]],
) -> None:
    """Re-solving with the previous solution as the lock returns the same solution."""
    registry, root, yanked = case
    provider = OfflineProvider(registry, yanked=yanked)
    dependencies = {name: Dependency.parse(name, text) for name, text in root.items()}
    try:
        first = solve(provider, dependencies)
    except NoSolution:
        return
    assert solve(OfflineProvider(registry, yanked=yanked), dependencies, locked=first) == first
    # Yanking every locked version afterwards does not change a locked resolution.
    later = OfflineProvider(registry, yanked=yanked | {(n, str(v)) for n, v in first.items()})
    assert solve(later, dependencies, locked=first) == first
