"""Lexical search score: exact slug > slug prefix > slug substring, then query tokens found in the
name and in the description; normalised to 0..1."""

from __future__ import annotations

import re
import threading
from bisect import bisect_left
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
    return _score(q, frozenset(tokens(q)), slug, name, description)


def _score(q: str, wanted: frozenset[str], slug: str, name: str, description: str) -> float:
    if not wanted:
        return 0.0
    total = 0.0
    if slug == q:
        total += _SLUG_EXACT
    elif slug.startswith(q):
        total += _SLUG_PREFIX
    elif q in slug:
        total += _SLUG_SUBSTRING
    in_name, in_description = _fields(slug, name, description)
    total += _NAME * len(wanted & in_name) / len(wanted)
    found = sum(1 for w in wanted if _has_prefix(in_description, w))
    total += _DESCRIPTION * found / len(wanted)
    return round(total / _MAX, 4)


MAX_FIELDS_BYTES = 32 * 1024 * 1024  # the text behind the cached tokens; past it the cache starts over
_cached: dict[tuple[str, str, str], tuple[frozenset[str], tuple[str, ...]]] = {}
_cached_bytes = [0]
_cached_lock = threading.Lock()


def _fields(slug: str, name: str, description: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """A package's name tokens and its sorted distinct description tokens (each search re-reads thousands),
    cached up to `MAX_FIELDS_BYTES` of the text they come from (about as many bytes of tokens again)."""
    key = (slug, name, description)
    found = _cached.get(key)
    if found is not None:
        return found
    found = frozenset(tokens(slug)) | frozenset(tokens(name)), tuple(sorted(set(tokens(description))))
    size = 2 * (len(slug) + len(name) + len(description)) + 200
    with _cached_lock:
        if _cached_bytes[0] + size > MAX_FIELDS_BYTES:
            _cached.clear()
            _cached_bytes[0] = 0
        if key not in _cached:
            _cached[key] = found
            _cached_bytes[0] += size
    return found


def _has_prefix(sorted_tokens: tuple[str, ...], prefix: str) -> bool:
    """Whether a token starts with `prefix`: the first token >= prefix is the only candidate."""
    i = bisect_left(sorted_tokens, prefix)
    return i < len(sorted_tokens) and sorted_tokens[i].startswith(prefix)


def rank(query: str, records: Iterable[PackageRecord]) -> list[tuple[float, PackageRecord]]:
    """The matching packages, best first (score, then downloads, then slug); what API and pages both show."""
    q = query.strip().lower()
    wanted = frozenset(tokens(q))
    scored = ((_score(q, wanted, r.slug, r.display_name, r.summary), r) for r in records)
    return sorted(((s, r) for s, r in scored if s > 0), key=lambda sr: (-sr[0], -sr[1].downloads, sr[1].slug))
