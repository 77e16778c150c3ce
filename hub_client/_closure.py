"""Reading a `POST /closure` answer: every package's `versions` document in one body, checked before use.

The answer is untrusted like any other: a package listed twice, more packages than `MAX_CLOSURE`, a
document whose kind or slug is not a valid name, or a malformed one makes the whole answer unusable
(ProtocolError), and the caller falls back to one `versions` request per package. A package the answer
should hold but leaves out is simply not in the result, so the caller asks for it on its own.
"""

from __future__ import annotations

from typing import Any

from valueclass import Record

from ._models import PackageVersions, check_slug, kind_and_plural

__all__ = ["MAX_CLOSURE", "ClosureAnswer", "ClosureDocuments", "parse_closure"]

# The most packages one answer may carry (the reference server visits at most this many).
MAX_CLOSURE = 1000


ClosureDocuments = dict[tuple[str, str], tuple[PackageVersions, str | None, Any]]


class ClosureAnswer(Record):
    """The documents received, keyed by (kind, slug), with their ETags and raw bodies (for the cache);
    `unchanged` are the (kind, slug) whose ETag the client sent and the server confirmed."""

    _fields = ("documents", "unchanged", "complete")
    documents: ClosureDocuments
    unchanged: tuple[tuple[str, str], ...]
    complete: bool

    def __init__(self, documents: ClosureDocuments, unchanged: tuple[tuple[str, str], ...], complete: bool) -> None:
        self.__dict__.update(documents=documents, unchanged=unchanged, complete=complete)


def _id(raw: object) -> tuple[str, str]:
    if not isinstance(raw, str) or ":" not in raw:
        raise ValueError(f"{str(raw)[:80]!r} is not a kind:slug id")
    kind, _, slug = raw.partition(":")
    return kind_and_plural(kind)[0], check_slug(slug)


def parse_closure(body: dict[str, Any]) -> ClosureAnswer:
    """The checked answer; ValueError/TypeError/KeyError describe what is wrong with it."""
    packages, unchanged_raw = body["packages"], body.get("unchanged") or []
    if not isinstance(packages, list) or not isinstance(unchanged_raw, list):
        raise TypeError("'packages' and 'unchanged' should be lists")
    if len(packages) + len(unchanged_raw) > MAX_CLOSURE:
        raise ValueError(f"{len(packages) + len(unchanged_raw)} packages, over the limit of {MAX_CLOSURE}")
    documents: ClosureDocuments = {}
    for item in packages:
        if not isinstance(item, dict):
            raise TypeError("each of 'packages' should be an object")
        raw, etag = item["versions"], item.get("etag")
        parsed = PackageVersions.from_versions_json(raw)
        key = (parsed.kind, check_slug(parsed.slug))
        if key in documents:
            raise ValueError(f"{parsed.kind} {parsed.slug} is listed twice")
        documents[key] = (parsed, etag if isinstance(etag, str) else None, raw)
    unchanged = tuple(_id(raw) for raw in unchanged_raw)
    if len(set(unchanged)) != len(unchanged) or set(unchanged) & set(documents):
        raise ValueError("a package is listed twice")
    return ClosureAnswer(documents, unchanged, body.get("complete") is True)
