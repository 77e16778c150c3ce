"""Split a main file into its YAML frontmatter and Markdown body, with positioned errors."""

from __future__ import annotations

from typing import Any

import frontmatter
import yaml


class FrontmatterError(ValueError):
    """The frontmatter is missing or is not a YAML mapping; the message has line and column."""


def split_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    if not text.lstrip("\ufeff").startswith("---"):
        raise FrontmatterError("missing YAML frontmatter (the file must start with a '---' line)")
    try:
        post = frontmatter.loads(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        # +1: the mark counts from the line after the opening '---'; +1 again: humans count from 1.
        where = f"line {mark.line + 2}, column {mark.column + 1}: " if mark else ""
        raise FrontmatterError(f"{where}invalid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"invalid YAML: {exc}") from None
    except (ValueError, TypeError) as exc:
        raise FrontmatterError(f"invalid frontmatter: {exc}") from None
    if not isinstance(post.metadata, dict) or not post.metadata:
        raise FrontmatterError("frontmatter must be a non-empty YAML mapping")
    return dict(post.metadata), post.content
