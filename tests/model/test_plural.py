"""One noun for one thing: "1 package", never "1 packages" or "1 package(s)"."""

from __future__ import annotations

import pytest

from strawpot.model.plural import count, noun


@pytest.mark.parametrize(("n", "singular", "expected"), [
    (1, "package", "1 package"), (0, "package", "0 packages"), (2, "package", "2 packages"),
    (1, "built file", "1 built file"), (3, "built file", "3 built files"),
    (2, "memory", "2 memories"), (2, "entry", "2 entries"), (2, "key", "2 keys"), (2, "match", "2 matches"),
    (1, "download", "1 download"), (1000, "byte", "1000 bytes"),
])
def test_count(n: int, singular: str, expected: str) -> None:
    assert count(n, singular) == expected


def test_noun_matches_the_kinds_plurals() -> None:
    from strawpot.model.kinds import KIND_ORDER

    assert [noun(2, kind.value) for kind in KIND_ORDER] == [kind.plural for kind in KIND_ORDER]
    assert [noun(1, kind.value) for kind in KIND_ORDER] == [kind.value for kind in KIND_ORDER]
