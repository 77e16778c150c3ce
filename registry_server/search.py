"""Lexical search score: exact slug > slug prefix > slug substring, then query tokens found in the
name and in the description; normalised to 0..1."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from registry_server.storage.base import PackageRecord

_TOKEN_RE = re.compile(r"[a-z0-9]+")
_SLUG_EXACT, _SLUG_PREFIX, _SLUG_SUBSTRING = 1.0, 0.7, 0.5
_NAME, _DESCRIPTION = 0.3, 0.15
_MAX = _SLUG_EXACT + _NAME + _DESCRIPTION


def tokens(text: str) -> list[str]:
    return _TOKEN_RE.findall(text.lower())


def score(query: str, slug: str, name: str, description: str) -> float:
    """How well a package matches `query`, 0 when it does not match at all."""
    q = query.strip().lower()
    wanted = set(tokens(q))
    if not wanted:
        return 0.0
    total = 0.0
    if slug == q:
        total += _SLUG_EXACT
    elif slug.startswith(q):
        total += _SLUG_PREFIX
    elif q in slug:
        total += _SLUG_SUBSTRING
    in_name = set(tokens(slug)) | set(tokens(name))
    total += _NAME * len(wanted & in_name) / len(wanted)
    in_description = tokens(description)
    found = sum(1 for w in wanted if any(t.startswith(w) for t in in_description))
    total += _DESCRIPTION * found / len(wanted)
    return round(total / _MAX, 4)


def rank(query: str, records: Iterable[PackageRecord]) -> list[tuple[float, PackageRecord]]:
    """The matching packages, best first (score, then downloads, then slug); what API and pages both show."""
    scored = ((score(query, r.slug, r.display_name, r.summary), r) for r in records)
    return sorted(((s, r) for s, r in scored if s > 0), key=lambda sr: (-sr[0], -sr[1].downloads, sr[1].slug))
