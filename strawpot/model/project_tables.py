"""What the tables of strawpot.toml may hold beyond settings: misspelt requirement tables and requirement keys."""

from __future__ import annotations

from collections.abc import Mapping

from strawpot.model.kinds import REQUIREMENT_TABLES, Kind
from valueclass import Record

TYPE_CHECKING = False  # typing is not imported on the read-only commands' path
if TYPE_CHECKING:
    from typing import Any

# The keys a requirement table (`name = { version = "^1", ... }`) may hold, by kind.
REQUIREMENT_KEYS: dict[Kind, tuple[str, ...]] = {
    kind: ("version", "path", *(("default_agent",) if kind is Kind.ROLE else ())) for kind in Kind
}
# `[skills.<name>.env]`, `[agents.<name>.env]`: the settings layer says where they belong (the global config).
_ENV_TABLE = frozenset({(Kind.SKILL, "env"), (Kind.AGENT, "env")})
# An agent's table also holds its params (free-form); only a key this close to one of its own keys is refused.
_AGENT_NEAR = 0.8


class Mistyped(Record):
    """A table of strawpot.toml that looks like a misspelt requirement table: `[skill]` for `[skills]`."""

    table: str
    wanted: str  # the requirement table it is close to
    entry: str = ""  # in a settings table: the first key that is not one of its settings

    def message(self) -> str:
        if self.entry:
            return f"[{self.table}] has no setting '{self.entry}'; did you mean [{self.wanted}]?"
        return f"unknown table [{self.table}]; did you mean [{self.wanted}]?"


def mistyped_table(data: Mapping[str, Any]) -> Mistyped | None:
    """The first table of a project file that reads like a misspelt requirement table, if any.

    A settings table (`[memory]` beside `[memories]`) is one only when it holds a key that is not one of its
    settings; the manifest refuses it and the no-op install path leaves it to the full path.
    """
    if REQUIREMENT_TABLES.issuperset(data):
        return None  # requirement tables alone (most manifests): the settings schema is not even imported
    from strawpot.model.settings import SCHEMA, SETTINGS_TABLES
    from strawpot.model.suggest import closest

    plurals = [kind.plural for kind in sorted(Kind, key=lambda k: k.plural)]
    for key, content in data.items():
        if key in REQUIREMENT_TABLES:
            continue
        singular = [kind.plural for kind in Kind if key == kind.value]
        near = closest(str(key), plurals, cutoff=0.8)
        close = singular or ([near] if near else [])
        if not close:
            continue
        if key not in SETTINGS_TABLES:
            return Mistyped(str(key), close[0])
        strangers = [str(k) for k in content if f"{key}.{k}" not in SCHEMA] if isinstance(content, Mapping) else []
        if strangers:
            return Mistyped(str(key), close[0], strangers[0])
    return None


def unknown_requirement_key(kind: Kind, name: str, table: Mapping[str, Any]) -> str | None:
    """Why a requirement table (`name = { versoin = "^1" }`) is refused, or None: a key it may not hold, in one
    line naming the table, the key, the keys allowed and the nearest of them."""
    from strawpot.model.suggest import closest, did_you_mean

    allowed = REQUIREMENT_KEYS[kind]
    for key in map(str, table):
        if key in allowed or (kind, key) in _ENV_TABLE:
            continue
        if kind is Kind.AGENT and closest(key, allowed, cutoff=_AGENT_NEAR) is None:
            continue  # an agent's param
        near = did_you_mean(key, allowed, show="'{}'")
        params = "; its other keys are the agent's params" if kind is Kind.AGENT else ""
        return (f"[{kind.plural}] {name}: unknown key '{key}' (a requirement takes {', '.join(allowed)}{params})"
                + (f"; {near}" if near else ""))
    return None
