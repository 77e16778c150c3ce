"""`Value`: what `@dataclass(frozen=True)` adds to hub_client's value classes, written once instead of compiled."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import Any, TypeVar

V = TypeVar("V", bound="Value")


class Value:
    """A value class whose `__init__` sets its fields (`self.__dict__.update(...)`), which cannot be assigned
    afterwards; compared, hashed and shown by `_fields` (in the order `__init__` takes them) as the frozen
    dataclass it stands for. `@dataclass` compiles these methods for every class at import (~1 ms each)."""

    _fields: tuple[str, ...] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(self.__dict__[name] for name in self._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{n}={self.__dict__[n]!r}' for n in self._fields)})"

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")


def replace(value: V, **changes: Any) -> V:
    """A copy of `value` with `changes` (as `dataclasses.replace`; its `__init__` checks them again)."""
    return type(value)(**{**{name: value.__dict__[name] for name in value._fields}, **changes})
