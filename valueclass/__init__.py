"""Value classes made without dataclasses' code generation: the bases every layer's value classes share."""

# `@dataclass(frozen=True)` compiles six methods a class at import, about 1 ms each class: a fifth of `strawpot tree`,
# and as much again of a cold install in resolver/ and hub_client/. This package imports nothing of ours, so the
# leaves (resolver, hub_client) may use it as the model does (docs/architecture.md, "valueclass: a leaf below the
# leaves"). A Record behaves the same as a frozen dataclass (tests/model/test_record.py holds it to dataclasses): keyword or positional fields in
# declaration order, defaults and `field(default_factory=...)`, `__post_init__`, `==` and `hash` over the fields
# between instances of one class, repr, no assignment.

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported on this path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, ClassVar, TypeVar, dataclass_transform

    R = TypeVar("R", bound="Record")
else:
    def dataclass_transform(**_: object) -> Callable[[type], type]:
        return lambda cls: cls

_MISSING = object()


class FrozenRecordError(AttributeError):
    """An assignment to a field of a record (dataclasses' FrozenInstanceError is an AttributeError too)."""


class _Field:
    """What `field()` gives a class attribute: its default, or the factory that makes one per instance."""

    __slots__ = ("default", "factory")

    def __init__(self, default: object, factory: Callable[[], object] | object) -> None:
        self.default, self.factory = default, factory


def field(*, default: Any = _MISSING, default_factory: Callable[[], Any] | object = _MISSING) -> Any:
    """A field's default made per instance (`default_factory=list`), as dataclasses' `field`."""
    return _Field(default, default_factory)


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
class Record:
    """Subclass it and annotate the fields; instances are immutable."""

    _fields: tuple[str, ...] = ()
    _defaults: dict[str, object] = {}
    _factories: dict[str, Callable[[], object]] = {}
    _post_init: ClassVar[Callable[[Any], None] | None] = None

    def __init_subclass__(cls) -> None:
        fields = list(cls._fields)
        defaults, factories = dict(cls._defaults), dict(cls._factories)
        for name, annotation in cls.__dict__.get("__annotations__", {}).items():
            if name.startswith("_") or str(annotation).startswith(("ClassVar", "typing.ClassVar")):
                continue
            if name not in fields:
                fields.append(name)
            given = cls.__dict__.get(name, _MISSING)
            if isinstance(given, _Field):
                defaults.pop(name, None)
                factories.pop(name, None)
                if given.factory is not _MISSING:
                    factories[name] = given.factory  # type: ignore[assignment]
                elif given.default is not _MISSING:
                    defaults[name] = given.default
                delattr(cls, name)
            elif given is not _MISSING:
                factories.pop(name, None)
                defaults[name] = given
        required_after_default = [n for i, n in enumerate(fields) if n not in defaults and n not in factories
                                  and any(m in defaults or m in factories for m in fields[:i])]
        if required_after_default:
            raise TypeError(f"non-default argument {required_after_default[0]!r} follows default argument")
        cls._fields, cls._defaults, cls._factories = tuple(fields), defaults, factories
        cls._post_init = getattr(cls, "__post_init__", None)  # looked up once a class, not once an instance
        setattr(cls, "__match_args__", tuple(fields))  # noqa: B010 (a class attribute mypy would not let be set)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._fields
        if not kwargs and len(args) == len(fields):  # every field given in order: most records a run makes
            self.__dict__.update(zip(fields, args, strict=True))
        else:
            self.__dict__.update(self._arguments(args, kwargs))
        if self._post_init is not None:
            self._post_init()

    def _arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Every field's value from positional and keyword arguments, defaults and factories, as dataclasses' __init__."""
        fields = self._fields
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__}() takes {len(fields)} positional arguments but {len(args)} "
                            "were given")
        values = dict(zip(fields, args, strict=False))
        for name, value in kwargs.items():
            if name not in fields:
                raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {name!r}")
            if name in values:
                raise TypeError(f"{type(self).__name__}() got multiple values for argument {name!r}")
            values[name] = value
        if len(values) < len(fields):
            for name in fields:
                if name in values:
                    continue
                if name in self._defaults:
                    values[name] = self._defaults[name]
                elif name in self._factories:
                    values[name] = self._factories[name]()
                else:
                    raise TypeError(f"{type(self).__name__}() missing required argument: {name!r}")
        return values

    def _values(self) -> tuple[object, ...]:
        return tuple(self.__dict__[name] for name in self._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={self.__dict__[name]!r}" for name in self._fields)
        return f"{type(self).__qualname__}({shown})"

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenRecordError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenRecordError(f"cannot delete field {name!r}")


def replace(record: R, **changes: Any) -> R:
    """A copy of `record` with `changes` (dataclasses' `replace`); `__post_init__` runs again."""
    return type(record)(**{**{name: record.__dict__[name] for name in record._fields}, **changes})


class Slotted:
    """A frozen value class with `__slots__` (the resolver's, made by the thousand in a solve): `_fields` names every
    field in the order `__init__` takes them, and `__init__`, written out, sets them with `object.__setattr__`.
    Compared, hashed, shown, locked and pickled as `@dataclass(frozen=True, slots=True)`."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()
    _get: Callable[[Any], object] = staticmethod(lambda _: ())  # the fields' values (operator.attrgetter: C speed)

    def __init_subclass__(cls) -> None:
        from operator import attrgetter

        if cls._fields:
            cls._get = attrgetter(*cls._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return bool(self._get(self) == other._get(other))

    def __hash__(self) -> int:
        return hash(self._get(self))

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenRecordError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenRecordError(f"cannot delete field {name!r}")

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{name}={getattr(self, name)!r}' for name in self._fields)})"

    def __getstate__(self) -> list[object]:
        return [getattr(self, name) for name in self._fields]

    def __setstate__(self, state: list[object]) -> None:
        for name, value in zip(self._fields, state, strict=True):
            object.__setattr__(self, name, value)


class State:
    """A mutable class compared and shown by its fields, as `@dataclass` would: subclass it, name the fields in
    `_fields` (the order `__init__` takes them) and set them in `__init__`, written out. Unhashable, as a mutable
    dataclass is; a field whose name starts with `_` is compared but not shown."""

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
