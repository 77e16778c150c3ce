"""`State`: a mutable class compared and shown by its fields, as `@dataclass` would, without its import-time code."""

from __future__ import annotations


class State:
    """Subclass it, name the fields in `_fields` (the order `__init__` takes them) and set them in `__init__`.

    `@dataclass` compiles `__init__`, `__repr__` and `__eq__` for every class when its module is imported (~1 ms
    each on a cold install); these are written once here and the `__init__` by hand. Unhashable, as a mutable
    dataclass is."""

    _fields: tuple[str, ...] = ()
    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields if not name.startswith("_"))
        return f"{type(self).__qualname__}({shown})"
