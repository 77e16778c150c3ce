"""The five package kinds, with their main files and install folders."""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    SKILL = "skill"
    ROLE = "role"
    AGENT = "agent"
    MEMORY = "memory"
    INTEGRATION = "integration"

    @property
    def plural(self) -> str:
        return "memories" if self is Kind.MEMORY else f"{self.value}s"

    @property
    def main_file(self) -> str:
        return f"{self.value.upper()}.md"

    @classmethod
    def parse(cls, text: str) -> Kind:
        """Accept a kind by its singular or plural name (`skill`, `skills`)."""
        lowered = text.strip().lower()
        for kind in cls:
            if lowered in (kind.value, kind.plural):
                return kind
        from strawpot.model.suggest import did_you_mean

        names = [k.value for k in cls]
        suggestion = did_you_mean(lowered, names)
        raise ValueError(f"unknown package kind {text!r}{'; ' + suggestion if suggestion else ''} "
                         f"(the kinds: {', '.join(names)})")

    @classmethod
    def from_main_file(cls, filename: str) -> Kind | None:
        for kind in cls:
            if kind.main_file == filename:
                return kind
        return None


# The order packages install and print in: what others depend on first.
KIND_ORDER: tuple[Kind, ...] = (Kind.SKILL, Kind.ROLE, Kind.AGENT, Kind.MEMORY, Kind.INTEGRATION)
# The tables of strawpot.toml that hold requirements: `[skills]`, `[roles]`, ... (every other table holds settings).
REQUIREMENT_TABLES = frozenset(kind.plural for kind in Kind)
