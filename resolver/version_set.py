"""Sets of versions as canonical unions of half-open intervals, with the set algebra PubGrub needs."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from resolver.version import MIN_VERSION, Version, version_predecessor, version_successor

__all__ = ["Interval", "VersionSet"]

Interval = tuple[Version | None, Version | None]
"""``(low, high)``: the versions ``v`` with ``low <= v < high``; ``None`` is unbounded."""


def _strip_build(version: Version | None) -> Version | None:
    if version is None or not version.build:
        return version
    return Version(version.major, version.minor, version.patch, version.prerelease)


def _low_key(low: Version | None) -> tuple[int, Version | None]:
    return (0, None) if low is None else (1, low)


class VersionSet:
    """An immutable, hashable set of versions in a canonical form.

    Every set is stored as sorted, disjoint, non-touching intervals ``[low, high)`` (``None`` meaning
    unbounded). Because every version has an immediate successor (`version_successor`), inclusive
    upper bounds and exclusive lower bounds are rewritten to this one shape, so two sets with the
    same members always have the same representation: equality of sets is equality of values.

    Primitives: `empty`, `full`, `singleton`, `complement`, `intersection`, `contains`; everything
    else is derived from them.
    """

    __slots__ = ("_hash", "_intervals", "_single")

    _intervals: tuple[Interval, ...]
    _hash: int | None  # computed on first use
    _single: Version | None | bool  # False until computed

    def __init__(self, intervals: Iterable[Interval] = ()) -> None:
        """Build a set from any intervals ``(low, high)``; they are sorted and merged."""
        spans: list[Interval] = []
        for low, high in intervals:
            low = None if low is not None and low <= MIN_VERSION else _strip_build(low)
            high = _strip_build(high)
            if low is not None and high is not None and not low < high:
                continue
            if high is not None and high <= MIN_VERSION:
                continue
            spans.append((low, high))
        spans.sort(key=lambda span: _low_key(span[0]))
        merged: list[Interval] = []
        for low, high in spans:
            if merged:
                last_low, last_high = merged[-1]
                if last_high is None:
                    continue
                if low is None or low <= last_high:
                    if high is None or high > last_high:
                        merged[-1] = (last_low, high)
                    continue
            merged.append((low, high))
        self._set(tuple(merged))

    def _set(self, intervals: tuple[Interval, ...]) -> None:
        object.__setattr__(self, "_intervals", intervals)
        object.__setattr__(self, "_hash", None)
        object.__setattr__(self, "_single", False)

    @classmethod
    def _canonical(cls, intervals: tuple[Interval, ...]) -> VersionSet:
        """Wrap intervals that are already canonical (no re-sorting)."""
        new = cls.__new__(cls)
        new._set(intervals)
        return new

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("VersionSet is immutable")

    def __reduce__(self) -> tuple[object, tuple[tuple[Interval, ...]]]:
        return (VersionSet._canonical, (self._intervals,))

    def __copy__(self) -> VersionSet:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> VersionSet:
        return self

    # -- primitives ---------------------------------------------------------------------------

    @classmethod
    def empty(cls) -> VersionSet:
        """The set with no versions."""
        return _EMPTY

    @classmethod
    def full(cls) -> VersionSet:
        """The set of every version."""
        return _FULL

    @classmethod
    def singleton(cls, version: Version) -> VersionSet:
        """The set holding exactly `version` (build metadata is ignored)."""
        new = cls([(version, version_successor(version))])
        object.__setattr__(new, "_single", _strip_build(version))
        return new

    def complement(self) -> VersionSet:
        """Every version not in this set."""
        out: list[Interval] = []
        cursor: Version | None = None
        for low, high in self._intervals:
            if low is not None:  # only the first interval can be unbounded below
                out.append((cursor, low))
            cursor = high
            if high is None:
                return VersionSet._canonical(tuple(out))
        out.append((cursor, None))
        return VersionSet._canonical(tuple(out))

    def intersection(self, other: VersionSet) -> VersionSet:
        """The versions in both sets."""
        if self is other or not self._intervals or other._intervals == _FULL_INTERVALS:
            return self
        if not other._intervals or self._intervals == _FULL_INTERVALS:
            return other
        left, right = self._intervals, other._intervals
        i = j = 0
        out: list[Interval] = []
        # Hot path of the solver: compare the versions' precomputed keys directly.
        while i < len(left) and j < len(right):
            low_a, high_a = left[i]
            low_b, high_b = right[j]
            low = low_b if low_a is None or (low_b is not None and low_b._key > low_a._key) else low_a
            high_a_first = high_a is not None and (high_b is None or high_a._key <= high_b._key)
            high = high_a if high_a_first else high_b
            if low is None or high is None or low._key < high._key:
                out.append((low, high))
            if high_a_first:
                i += 1
            else:
                j += 1
        return VersionSet._canonical(tuple(out))

    def contains(self, version: Version) -> bool:
        """Whether `version` is in the set."""
        key = version._key
        for low, high in self._intervals:
            if high is not None and not key < high._key:
                continue
            return low is None or low._key <= key
        return False

    # -- derived ------------------------------------------------------------------------------

    def __contains__(self, version: object) -> bool:
        return isinstance(version, Version) and self.contains(version)

    def union(self, other: VersionSet) -> VersionSet:
        """The versions in either set."""
        return self.complement().intersection(other.complement()).complement()

    def difference(self, other: VersionSet) -> VersionSet:
        """The versions in this set and not in `other`."""
        return self.intersection(other.complement())

    def is_empty(self) -> bool:
        """Whether the set has no versions."""
        return not self._intervals

    def is_full(self) -> bool:
        """Whether the set holds every version."""
        return self._intervals == _FULL_INTERVALS

    def is_subset(self, other: VersionSet) -> bool:
        """Whether every version of this set is in `other`."""
        return self.intersection(other) == self

    def is_disjoint(self, other: VersionSet) -> bool:
        """Whether no version is in both sets."""
        return self.intersection(other).is_empty()

    def is_singleton(self) -> bool:
        """Whether the set holds exactly one version."""
        return self.single_version() is not None

    def single_version(self) -> Version | None:
        """The only version of the set, or None unless the set is a singleton."""
        single = self._single
        if single is False:
            single = self._compute_single()
            object.__setattr__(self, "_single", single)
        return single  # type: ignore[return-value]

    def _compute_single(self) -> Version | None:
        if len(self._intervals) != 1:
            return None
        low, high = self._intervals[0]
        if high is None:
            return None
        if low is None:
            return MIN_VERSION if high == version_successor(MIN_VERSION) else None
        return low if version_successor(low) == high else None

    @property
    def intervals(self) -> tuple[Interval, ...]:
        """The canonical intervals ``(low, high)``, meaning ``low <= v < high``."""
        return self._intervals

    def filter(self, versions: Iterable[Version]) -> Iterator[Version]:
        """The members of `versions` that are in this set, in the given order."""
        return (v for v in versions if self.contains(v))

    __and__ = intersection
    __or__ = union
    __sub__ = difference
    __invert__ = complement

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, VersionSet):
            return NotImplemented
        return self._intervals == other._intervals

    def __hash__(self) -> int:
        if self._hash is None:
            object.__setattr__(self, "_hash", hash(self._intervals))
        return self._hash  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"VersionSet({str(self)!r})"

    def __str__(self) -> str:
        """A specifier-like text: ``>=1.2.0, <2.0.0``, ``==1.0.0``, ``!=1.5.0``, ``*``, ``<none>``.

        Intervals separated by a single missing version are written with ``!=``; other
        disjoint pieces are joined with ``||``. The output parses back with `parse_specifier`.
        """
        if not self._intervals:
            return "<none>"
        if self.is_full():
            return "*"
        groups: list[list[Interval]] = [[self._intervals[0]]]
        for span in self._intervals[1:]:
            previous_high = groups[-1][-1][1]
            assert previous_high is not None and span[0] is not None
            if version_successor(previous_high) == span[0]:
                groups[-1].append(span)
            else:
                groups.append([span])
        return " || ".join(_format_group(group) for group in groups)


def _format_group(group: list[Interval]) -> str:
    low, high = group[0][0], group[-1][1]
    holes = [span[1] for span in group[:-1]]
    if high is not None and version_successor(low or MIN_VERSION) == high:
        return f"=={low or MIN_VERSION}"
    parts: list[str] = []
    if low is not None:
        before = version_predecessor(low)
        parts.append(f">{before}" if before is not None else f">={low}")
    if high is not None:
        before = version_predecessor(high)
        parts.append(f"<={before}" if before is not None else f"<{high}")
    parts.extend(f"!={hole}" for hole in holes)
    return ", ".join(parts)


_FULL_INTERVALS: tuple[Interval, ...] = ((None, None),)
_EMPTY = VersionSet._canonical(())
_FULL = VersionSet._canonical(_FULL_INTERVALS)
