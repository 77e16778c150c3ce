"""Environment variables that agents and skills declare: where each value comes from, and what is missing.

A value comes from the process environment, else from `[agents.<name>.env]` / `[skills.<name>.env]` in the
global config file (never the project's strawpot.toml, which is committed), else from a value typed at the
`start` prompt, else from the declared default. An empty value counts as unset. Every declared variable with
a value is exported into the environment of the agents that need them (they inherit nothing else but an
allow-list, `strawpot.model.child_env`): an agent gets its own package's variables and those of the skills
staged for its role.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from strawpot.model.kinds import Kind
from strawpot.model.package import EnvSpec

ENV_KINDS = (Kind.AGENT, Kind.SKILL)


@dataclass(frozen=True)
class EnvNeed:
    """One variable one package declares."""

    kind: Kind
    package: str
    spec: EnvSpec

    @property
    def owner(self) -> str:
        return f"{self.kind.value} {self.package}"

    def describe(self) -> str:
        what = f": {self.spec.description}" if self.spec.description else ""
        return f"{self.spec.name} (required by {self.owner}){what}"


class EnvValues:
    """Answers, for each declared variable, its value and whether it must be exported."""

    def __init__(self, environ: Mapping[str, str], saved: Mapping[tuple[Kind, str], Mapping[str, str]]) -> None:
        self.environ = dict(environ)
        self.saved = {key: dict(values) for key, values in saved.items()}
        self.typed: dict[tuple[Kind, str, str], str] = {}

    def value(self, need: EnvNeed) -> str | None:
        """The value `need` gets, or None when it has none (a required variable with none is missing)."""
        name = need.spec.name
        for candidate in (self.environ.get(name), self.saved.get((need.kind, need.package), {}).get(name),
                          self.typed.get((need.kind, need.package, name)), need.spec.default):
            if candidate:
                return candidate
        return None

    def missing(self, needs: Iterable[EnvNeed]) -> list[EnvNeed]:
        return [n for n in needs if n.spec.required and self.value(n) is None]

    def supply(self, need: EnvNeed, value: str) -> None:
        """A value typed by the user for this run."""
        self.typed[(need.kind, need.package, need.spec.name)] = value

    def exported(self, needs: Iterable[EnvNeed]) -> dict[str, str]:
        """The declared variables to put in an agent's environment, with their values."""
        return {need.spec.name: value for need in needs if (value := self.value(need)) is not None}


def package_needs(kind: Kind, name: str, specs: Mapping[str, EnvSpec]) -> list[EnvNeed]:
    return [EnvNeed(kind, name, spec) for spec in specs.values()]
