"""A registry's v1 answer as our JSON reports carry it: snake_case keys, times in seconds (docs/json.md).

The StrawHub API v1 answers in camelCase with times in milliseconds (`displayName`, `latestVersion`,
`createdAt`); a command converts an answer with `from_registry` where it reads it, and builds the rest of
its report in snake_case from the start.
"""

from __future__ import annotations

import re
from typing import Any

# Values under these keys are a package's own names (dependency groups, frontmatter, params, env variables,
# tools, install scripts): kept as written.
AS_WRITTEN = frozenset({"dependencies", "metadata", "frontmatter", "params", "env", "tools", "install"})

_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])([A-Z])")


def snake(name: str) -> str:
    """`displayName` → `display_name`; a name with no lower-then-upper hump (`GITHUB_TOKEN`, `slug`) unchanged."""
    return _CAMEL_HUMP.sub(r"_\1", name).lower() if re.search(r"[a-z][A-Z]", name) else name


def from_registry(value: Any) -> Any:
    """`value`, a registry answer (or a part of one), with snake_case keys and its `…At` times in seconds."""
    if isinstance(value, list):
        return [from_registry(v) for v in value]
    if not isinstance(value, dict):
        return value
    converted: dict[str, Any] = {}
    for key, inner in value.items():
        name = snake(str(key))
        if name in AS_WRITTEN:
            converted[name] = inner
        elif name.endswith("_at") and isinstance(inner, int | float) and not isinstance(inner, bool):
            converted[name] = inner / 1000  # the API's times are milliseconds since the epoch
        else:
            converted[name] = from_registry(inner)
    return converted
