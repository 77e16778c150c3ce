"""A cold install's modules define no `@dataclass` (its methods compile at import): `valueclass` bases instead."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from pathlib import Path

import pytest

from valueclass import Record, Slotted, State, replace

ROOT = Path(__file__).resolve().parents[2]
# modules a cold `install` never imports (tests/commands/test_command_table.py keeps strawpot.install.tools out)
NOT_ON_THE_PATH = {"strawpot.install.audit", "strawpot.install.tools", "strawpot.install.trust_diff"}
STILL_DATACLASSES: set[str] = set()
# the model's modules whose classes a cold install makes (the archive's members, the dependency edges)
MODEL_ON_THE_PATH = ["strawpot.model.archive", "strawpot.model.dependencies"]


def modules() -> list[str]:
    found = []
    for package in ("strawpot.install", "hub_client", "resolver"):
        path = ROOT.joinpath(*package.split("."))
        found += [f"{package}.{m.name}" for m in pkgutil.iter_modules([str(path)])]
    return [m for m in found if m not in NOT_ON_THE_PATH] + MODEL_ON_THE_PATH


def test_the_install_path_defines_no_dataclass() -> None:
    made = set()
    for name in modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == name and dataclasses.is_dataclass(value):
                made.add(f"{name}.{value.__qualname__}")
    assert made == STILL_DATACLASSES


class Point(State):
    _fields = ("x", "_seen")

    def __init__(self, x: list[int], _seen: int = 0) -> None:
        self.x, self._seen = x, _seen


@dataclasses.dataclass
class DataPoint:
    x: list[int]
    _seen: int = dataclasses.field(default=0, repr=False)


def test_a_state_compares_and_shows_as_a_mutable_dataclass() -> None:
    assert (Point([1]) == Point([1]), Point([1]) == Point([2])) == (DataPoint([1]) == DataPoint([1]), False)
    assert Point([1], 1) != Point([1], 2) and DataPoint([1], 1) != DataPoint([1], 2)
    assert repr(Point([1], 5)).replace("Point", "") == repr(DataPoint([1], 5)).replace("DataPoint", "")
    assert Point([1]).__eq__(DataPoint([1])) is NotImplemented
    with pytest.raises(TypeError):
        hash(Point([1]))
    with pytest.raises(TypeError):
        hash(DataPoint([1]))


class Pair(Slotted):
    __slots__ = _fields = ("a", "b")

    def __init__(self, a: int, b: tuple[int, ...] = ()) -> None:
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class DataPair:
    a: int
    b: tuple[int, ...] = ()


def test_a_frozen_value_is_shown_locked_and_pickled_as_a_frozen_slotted_dataclass() -> None:
    import pickle

    assert repr(Pair(1, (2,))).replace("Pair", "") == repr(DataPair(1, (2,))).replace("DataPair", "")
    for made in (Pair(1), DataPair(1)):
        with pytest.raises(AttributeError):
            made.a = 2  # type: ignore[misc]
        with pytest.raises(AttributeError):
            del made.a  # type: ignore[misc]
    with pytest.raises(AttributeError):  # (3.11's slotted dataclass: a TypeError, a bug)
        Pair(1).c = 3  # type: ignore[attr-defined]
    back = pickle.loads(pickle.dumps(Pair(1, (2,))))
    assert (back.a, back.b) == (1, (2,)) and not hasattr(back, "__dict__")
    assert back == Pair(1, (2,)) and hash(back) == hash(Pair(1, (2,))) and Pair(1) != Pair(2) and Pair(1) != Pair(1, (3,))
    assert Pair(1).__eq__(DataPair(1)) is NotImplemented and len({Pair(1), Pair(1), Pair(2)}) == 2


class Limits(Record):
    _fields = ("a", "b")

    def __init__(self, a: int, b: list[int] | None = None) -> None:
        self.__dict__.update(a=a, b=b)


@dataclasses.dataclass(frozen=True)
class DataLimits:
    a: int
    b: list[int] | None = None


def test_a_hub_client_value_behaves_as_a_frozen_dataclass() -> None:
    for made, data in ((Limits(1), DataLimits(1)), (Limits(1, [2]), DataLimits(1, [2]))):
        assert repr(made).replace("Limits", "") == repr(data).replace("DataLimits", "")
        assert (made == Limits(made.a, made.b)) and made != Limits(9, made.b) and made.__eq__(data) is NotImplemented
        with pytest.raises(AttributeError):
            made.a = 2  # type: ignore[misc]
        with pytest.raises(AttributeError):
            del made.a  # type: ignore[misc]
    assert hash(Limits(1)) == hash(Limits(1)) == hash(DataLimits(1))
    with pytest.raises(TypeError):  # a list field: unhashable, as the dataclass
        hash(Limits(1, [2]))
    assert replace(Limits(1, [2]), a=3) == Limits(3, [2]) and replace(Limits(1), b=[4]).b == [4]
    with pytest.raises(TypeError):
        replace(Limits(1), c=1)
