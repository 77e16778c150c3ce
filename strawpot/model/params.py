"""Agent params: declared types and defaults, and how the user's values become the typed `--config` values.

A param's `type` is one of string, integer, number, boolean. Without `type` it is inferred from the default
(true/false → boolean, 3 → integer, 0.5 → number, anything else → string); without either it is a string.
Values merge as: the package's defaults < `[agents.<name>]` in strawpot.toml < `strawpot start --param`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from strawpot.model.errors import UsageError

PARAM_TYPES = ("string", "integer", "number", "boolean")
_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})


class ParamError(ValueError):
    """A value does not fit a param's type; the message says what was expected."""


@dataclass(frozen=True)
class ParamSpec:
    """A parameter an agent declares: its name, type, default and description."""

    name: str
    type: str
    default: Any  # None: no default, the param is absent from --config unless the user sets it
    description: str = ""


def infer_type(default: Any) -> str:
    if isinstance(default, bool):
        return "boolean"
    if isinstance(default, int):
        return "integer"
    if isinstance(default, float):
        return "number"
    return "string"


def check_value(kind: str, value: Any) -> Any:
    """`value` (already typed, from YAML or TOML) if it fits `kind`; raises ParamError otherwise."""
    fits = {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, int | float) and not isinstance(value, bool)
        and math.isfinite(value),
        "boolean": isinstance(value, bool),
    }[kind]
    if not fits:
        raise ParamError(f"{value!r} is not a{'n' if kind == 'integer' else ''} {kind}")
    return value


def parse_text(kind: str, text: str) -> Any:
    """A command-line value (`--param NAME=VALUE`) as a value of `kind`; raises ParamError."""
    if kind == "string":
        return text
    if kind == "boolean":
        word = text.strip().lower()
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
        raise ParamError(f"{text!r} is not a boolean (use true or false)")
    try:
        value: Any = int(text) if kind == "integer" else float(text)
    except ValueError:
        raise ParamError(f"{text!r} is not a{'n' if kind == 'integer' else ''} {kind}") from None
    return check_value(kind, value)


def parse_specs(raw: Mapping[str, Any]) -> tuple[dict[str, ParamSpec], list[tuple[str, str]]]:
    """`metadata.strawpot.params` as specs, and every (field, problem) found on the way."""
    specs: dict[str, ParamSpec] = {}
    problems: list[tuple[str, str]] = []
    for key, entry in raw.items():
        name, fld = str(key), f"metadata.strawpot.params.{key}"
        spec = entry if isinstance(entry, dict) else {"default": entry}
        default, kind, description = spec.get("default"), spec.get("type"), spec.get("description", "")
        if kind is None:
            kind = infer_type(default)
        elif kind not in PARAM_TYPES:
            problems.append((f"{fld}.type", f"{kind!r} is not a param type (use {', '.join(PARAM_TYPES)})"))
            continue
        if default is not None:
            try:
                check_value(kind, default)
            except ParamError as exc:
                problems.append((f"{fld}.default", f"{exc} (type: {kind})"))
                continue
        if not isinstance(description, str):
            problems.append((f"{fld}.description", "must be a string"))
            description = ""
        specs[name] = ParamSpec(name, kind, default, description)
    return specs, problems


def defaults(specs: Mapping[str, ParamSpec]) -> dict[str, Any]:
    """The params that have a default, with it."""
    return {name: spec.default for name, spec in specs.items() if spec.default is not None}


def parse_assignments(items: tuple[str, ...] | list[str]) -> dict[str, str]:
    """`--param NAME=VALUE` options as {NAME: VALUE}; a missing `=` is a usage error."""
    values: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--param {item!r}: expected NAME=VALUE", hint="for example --param model=small")
        values[name.strip()] = value
    return values


def merge(agent: str, specs: Mapping[str, ParamSpec], settings: Mapping[str, Any],
          overrides: Mapping[str, str], *, settings_where: str = "strawpot.toml") -> dict[str, Any]:
    """defaults < `[agents.<agent>]` settings < `--param` overrides; UsageError names agent and param."""
    merged = defaults(specs)
    for source, values, from_text in ((f"{settings_where} [agents.{agent}]", settings, False),
                                      ("--param", overrides, True)):
        for name, value in values.items():
            spec = specs.get(name)
            if spec is None:
                known = ", ".join(sorted(specs)) or "none"
                raise UsageError(f"{source}: agent {agent} has no param {name!r} (its params: {known})")
            try:
                merged[name] = parse_text(spec.type, value) if from_text else check_value(spec.type, value)
            except ParamError as exc:
                raise UsageError(f"{source}: param {name!r} of agent {agent}: {exc}") from None
    return merged
