""""Did you mean …?": the one rule for the nearest name a user could have meant (commands, kinds, slugs, keys)."""

from __future__ import annotations

from collections.abc import Iterable

CUTOFF = 0.6  # difflib's ratio: `instal` → `install`, `skil` → `skill`, `git-worflow` → `git-workflow`


def closest(word: str, choices: Iterable[str], *, cutoff: float = CUTOFF) -> str | None:
    """The choice nearest to `word` (never `word` itself), or None when none is near enough."""
    found = nearest(word, choices, n=1, cutoff=cutoff)
    return found[0] if found else None


def nearest(word: str, choices: Iterable[str], *, n: int = 3, cutoff: float = CUTOFF) -> list[str]:
    """Up to `n` choices near enough to `word` (never `word` itself), nearest first."""
    import difflib  # on a mistake only: modules that name a choice import this one on every run

    options = sorted({each for each in choices if each != word})
    return difflib.get_close_matches(word, options, n=n, cutoff=cutoff)


def did_you_mean(word: str, choices: Iterable[str], *, cutoff: float = CUTOFF, show: str = "{}") -> str | None:
    """"did you mean X?" with the nearest choice put into `show` (e.g. "`strawpot {}`"), or None."""
    found = closest(word, choices, cutoff=cutoff)
    return f"did you mean {show.format(found)}?" if found is not None else None
