"""`Frozen`: what `@dataclass(frozen=True, slots=True)` adds to a value class, written once instead of compiled."""

from __future__ import annotations

from dataclasses import FrozenInstanceError


class Frozen:
    """A slotted value class whose fields cannot be assigned after `__init__` (which sets them with
    `object.__setattr__`), shown and pickled as the dataclass it stands for. `_fields` names every field, in the
    order `__init__` takes them; `==` and `hash` are each class's own, written out where it compares."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{name}={getattr(self, name)!r}' for name in self._fields)})"

    def __getstate__(self) -> list[object]:
        return [getattr(self, name) for name in self._fields]

    def __setstate__(self, state: list[object]) -> None:
        for name, value in zip(self._fields, state, strict=True):
            object.__setattr__(self, name, value)
