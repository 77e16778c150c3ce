"""Split a main file into its YAML frontmatter and Markdown body, with positioned errors."""

from __future__ import annotations

from typing import Any

import frontmatter
import yaml
from frontmatter.default_handlers import YAMLHandler

_BOUNDARY = YAMLHandler.FM_BOUNDARY


class FrontmatterError(ValueError):
    """The frontmatter is missing or is not a YAML mapping; the message has line and column."""


def split_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    text = text.removeprefix("\ufeff")
    opening = _BOUNDARY.match(text)
    if opening is None:
        raise FrontmatterError("missing YAML frontmatter (the file must start with a '---' line)")
    if _BOUNDARY.search(text, opening.end()) is None:
        raise FrontmatterError("the YAML frontmatter has no closing '---' line")
    # The YAML text starts right after the opening boundary, on this (0-based) line of the file.
    first_line = text.count("\n", 0, opening.end())
    try:
        post = frontmatter.loads(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {first_line + mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise FrontmatterError(f"{where}invalid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"invalid YAML: {exc}") from None
    except (ValueError, TypeError) as exc:
        raise FrontmatterError(f"invalid frontmatter: {exc}") from None
    if not isinstance(post.metadata, dict) or not post.metadata:
        raise FrontmatterError("frontmatter must be a non-empty YAML mapping")
    return dict(post.metadata), post.content
