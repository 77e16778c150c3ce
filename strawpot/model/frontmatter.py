"""Split a main file into its YAML frontmatter and Markdown body: the one safe YAML reader of client and server.

Package metadata needs neither aliases, anchors nor merge keys, and they are how a few hundred bytes
of YAML become gigabytes (billion laughs) or minutes of work; they are refused while composing, with
the line and column. The frontmatter's size is checked before the YAML parser sees it, and its nesting
depth while composing (PyYAML's composer recurses once per level), so no input reaches the resolver
or the constructor deeper than `MAX_DEPTH` or larger than `MAX_FRONTMATTER_SIZE`.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

import yaml
from yaml.composer import ComposerError
from yaml.events import AliasEvent, Event, MappingStartEvent, NodeEvent, SequenceStartEvent
from yaml.nodes import MappingNode, Node

from strawpot.model.display import short_text

MAX_FRONTMATTER_SIZE = 64 * 1024
MAX_DEPTH = 32
_MERGE_TAG = "tag:yaml.org,2002:merge"
# A line of three or more dashes, trailing blanks allowed (never across lines, so no backtracking over text).
_BOUNDARY = re.compile(r"^-{3,}[^\S\n]*$", re.MULTILINE)


class FrontmatterError(ValueError):
    """The frontmatter is missing, too large, unsafe or not a YAML mapping; the message has line and column."""


class _Refused(ComposerError):
    """A construct the safe reader refuses (alias, anchor, merge key, depth)."""


class _SafeLoader(yaml.SafeLoader):
    """PyYAML's pure-Python safe loader with aliases, anchors and merge keys refused and depth bounded."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event: Event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, AliasEvent):
            _refuse(f"alias *{event.anchor} is not allowed (frontmatter takes no aliases)", event.start_mark)
        if isinstance(event, NodeEvent) and event.anchor is not None:
            _refuse(f"anchor &{event.anchor} is not allowed (frontmatter takes no anchors)", event.start_mark)
        nested = isinstance(event, (MappingStartEvent, SequenceStartEvent))
        if nested:
            self._depth += 1
            if self._depth > MAX_DEPTH:
                _refuse(f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
        node = super().compose_node(parent, index)
        if nested:
            self._depth -= 1
        if isinstance(node, MappingNode):
            for key, _ in node.value:
                if key.tag == _MERGE_TAG:
                    _refuse("merge key '<<' is not allowed (write the keys out)", key.start_mark)
        return node


def _refuse(problem: str, mark: Any) -> NoReturn:
    raise _Refused(None, None, problem, mark)


def split_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """The frontmatter as a mapping and the body (both stripped); FrontmatterError on anything else."""
    text = text.removeprefix("\ufeff")
    opening = _BOUNDARY.match(text)
    if opening is None:
        raise FrontmatterError("missing YAML frontmatter (the file must start with a '---' line)")
    closing = _BOUNDARY.search(text, opening.end())
    if closing is None:
        raise FrontmatterError("the YAML frontmatter has no closing '---' line")
    source = text[opening.end():closing.start()]
    size = len(source.encode("utf-8", "surrogatepass"))
    if size > MAX_FRONTMATTER_SIZE:
        raise FrontmatterError(f"frontmatter is {size} bytes, more than the limit of {MAX_FRONTMATTER_SIZE}")
    # The YAML text starts right after the opening boundary, on this (0-based) line of the file.
    first_line = text.count("\n", 0, opening.end())
    meta = _load(source, first_line)
    if not isinstance(meta, dict) or not meta:
        raise FrontmatterError("frontmatter must be a non-empty YAML mapping")
    return meta, text[closing.end():].strip()


def _load(source: str, first_line: int) -> Any:
    loader: _SafeLoader | None = None
    try:
        loader = _SafeLoader(source)  # the reader checks for unprintable characters here already
        return loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {first_line + mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = exc.problem if isinstance(exc, _Refused) else f"invalid YAML: {exc.problem or exc.context}"
        raise FrontmatterError(f"{where}{what}") from None
    except yaml.reader.ReaderError as exc:
        line = first_line + source.count("\n", 0, exc.position) + 1
        column = exc.position - (source.rfind("\n", 0, exc.position) + 1) + 1
        raise FrontmatterError(f"line {line}, column {column}: character #x{exc.character:04x} is not allowed") from None
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"invalid YAML: {short_text(str(exc).replace(chr(10), ' '), 160)}") from None
    except (ValueError, TypeError, OverflowError) as exc:  # a scalar the constructor cannot convert
        raise FrontmatterError(f"invalid frontmatter: {short_text(str(exc), 160)}") from None
    finally:
        if loader is not None:
            loader.dispose()
