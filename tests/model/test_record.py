"""`Record` behaves as `@dataclass(frozen=True)` for the same class body, and the model's value classes are Records."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import pytest

import valueclass
from valueclass import Record, field, replace


def make(body: str, flavour: str, *, base: str = "") -> type:
    """The class `C` of `body` as a Record or as a frozen dataclass (a subclass of the class `B` of `base` when
    given); the body runs as written (annotations evaluated) with the flavour's own `field`."""
    namespace: dict[str, Any] = {"Record": Record, "dataclass": dataclasses.dataclass, "ClassVar": ClassVar,
                                 "object_setattr": object.__setattr__,
                                 "field": field if flavour == "record" else dataclasses.field}
    decorator = "@dataclass(frozen=True)\n" if flavour == "dataclass" else ""
    root = "(Record)" if flavour == "record" else ""
    source = ""
    if base:
        source += f"{decorator}class B{root}:\n{textwrap.indent(base, '    ')}\n"
    source += f"{decorator}class C{'(B)' if base else root}:\n{textwrap.indent(body, '    ')}\n"
    exec(compile(source, f"<{flavour}>", "exec", dont_inherit=True), namespace)  # noqa: S102 (no __future__ here)
    made: type = namespace["C"]
    return made


def pair(body: str, *, base: str = "") -> tuple[type, type]:
    """The class of `body` as a Record and as a frozen dataclass."""
    return make(body, "record", base=base), make(body, "dataclass", base=base)


BODY = """
name: str
count: int = 2
tags: list = field(default_factory=list)
"""


def outcome(call: Any) -> tuple[str, object]:
    """("ok", repr of the value) or (the exception's class name, None): comparable across the two flavours."""
    try:
        value = call()
    except TypeError:
        return "TypeError", None
    return "ok", repr(value)


@pytest.mark.parametrize(("args", "kwargs"), [
    (("a",), {}), (("a", 3), {}), (("a", 3, [1]), {}), ((), {"name": "a"}), (("a",), {"tags": [2], "count": 0}),
    ((), {"count": 1, "name": "b"}),
    ((), {}), (("a", 1, [], 9), {}), (("a",), {"name": "b"}), ((), {"nme": "a"}), (("a",), {"other": 1}),
    ((), {"count": 1}),
])
def test_construction_is_dataclasses(args: tuple[object, ...], kwargs: dict[str, object]) -> None:
    """Positional and keyword fields, defaults and factories; a missing, extra or repeated argument is a TypeError."""
    rec, dc = pair(BODY)
    assert outcome(lambda: rec(*args, **kwargs)) == outcome(lambda: dc(*args, **kwargs))
    assert rec.__match_args__ == dc.__match_args__ == ("name", "count", "tags")


def test_a_default_factory_is_called_per_instance() -> None:
    rec, _ = pair(BODY)
    first, second = rec("a"), rec("b")
    assert first.tags == [] and first.tags is not second.tags


def test_equality_hash_and_repr_are_dataclasses() -> None:
    rec, dc = pair(BODY.replace("list = field(default_factory=list)", "tuple = field(default_factory=tuple)"))
    other, _ = pair(BODY.replace("list = field(default_factory=list)", "tuple = field(default_factory=tuple)"))
    for args in (("a",), ("a", 3, (1, 2)), ("", -1, ())):
        assert rec(*args) == rec(*args) and dc(*args) == dc(*args)
        assert hash(rec(*args)) == hash(dc(*args))  # both hash the tuple of the fields
        assert repr(rec(*args)) == repr(dc(*args))
        assert rec(*args) != other(*args) and rec(*args) != dc(*args)  # another class with equal fields
        assert (rec(*args) == ("a",)) is (dc(*args) == ("a",)) is False
    assert rec("a") != rec("b") and rec("a", 1) != rec("a", 2)
    assert len({rec("a"), rec("a"), rec("b")}) == 2
    assert rec.__eq__(rec("a"), object()) is NotImplemented is dc.__eq__(dc("a"), object())


@pytest.mark.parametrize("name", ["name", "count", "tags", "new"])
def test_assignment_and_deletion_are_refused(name: str) -> None:
    rec, dc = pair(BODY)
    for made in (rec("a"), dc("a")):
        with pytest.raises(AttributeError):
            setattr(made, name, 1)
        with pytest.raises(AttributeError):
            delattr(made, name)
    assert rec("a").count == 2


def test_post_init_runs_and_may_set_attributes() -> None:
    body = BODY + """
def __post_init__(self):
    object_setattr(self, "count", self.count * 10)
    object_setattr(self, "derived", self.name.upper())
"""
    rec, dc = pair(body)
    for made in (rec("a", 3), dc("a", 3)):
        assert (made.count, made.derived) == (30, "A")
    assert repr(rec("a", 3)) == repr(dc("a", 3))
    # replace() runs __post_init__ again, as dataclasses.replace
    assert repr(replace(rec("a", 3), name="b")) == repr(dataclasses.replace(dc("a", 3), name="b"))
    refusing = pair("x: int\ndef __post_init__(self):\n    raise TypeError('no')\n")
    for made in refusing:
        with pytest.raises(TypeError, match="no"):
            made(1)


@pytest.mark.parametrize("changes", [{}, {"name": "b"}, {"count": 7, "tags": [1]}])
def test_replace_is_dataclasses_replace(changes: dict[str, object]) -> None:
    rec, dc = pair(BODY)
    assert repr(replace(rec("a", 1, [9]), **changes)) == repr(dataclasses.replace(dc("a", 1, [9]), **changes))
    with pytest.raises(TypeError):
        replace(rec("a"), other=1)
    with pytest.raises(TypeError):
        dataclasses.replace(dc("a"), other=1)


def test_a_subclass_adds_its_fields_after_its_bases() -> None:
    rec, dc = pair("extra: int = 0\nmore: str = 'm'\n", base=BODY)
    assert rec.__match_args__ == dc.__match_args__ == ("name", "count", "tags", "extra", "more")
    assert repr(rec("a", 1, [], 5)) == repr(dc("a", 1, [], 5))
    assert repr(rec("a", extra=2)) == repr(dc("a", extra=2))
    assert issubclass(rec, Record)


def test_a_required_field_after_a_defaulted_one_is_refused_when_the_class_is_made() -> None:
    for body, base in (("a: int = 1\nb: int\n", ""), ("b: int\n", "a: int = 1\n"),
                       ("a: list = field(default_factory=list)\nb: int\n", "")):
        for flavour in ("record", "dataclass"):
            with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
                make(body, flavour, base=base)


@pytest.mark.parametrize(("body", "base", "calls"), [
    ("x: int = field()\n", "", [(), (1,)]),  # field() without a default: a required field
    ("x: list = field(default_factory=list)\n", "x: int = 1\n", [(), (2,)]),  # a subclass's factory replaces a default
    ("x: int = 5\n", "x: list = field(default_factory=list)\n", [()]),  # a subclass's default replaces a factory
])
def test_field_and_overridden_defaults_are_dataclasses(body: str, base: str, calls: list[tuple[object, ...]]) -> None:
    rec, dc = pair(body, base=base)
    for args in calls:
        assert outcome(lambda a=args: rec(*a)) == outcome(lambda a=args: dc(*a)), args


def test_a_class_variable_is_not_a_field() -> None:
    """`ClassVar` annotations are class attributes, not fields (dataclasses leaves them out of __init__)."""
    rec, dc = pair("name: str\nlimit: ClassVar[int] = 3\n")
    assert outcome(lambda: rec("a")) == outcome(lambda: dc("a"))
    assert rec.__match_args__ == dc.__match_args__ == ("name",)


# pickling finds a class by its module and name: these live in this module
class Point(Record):
    """A record for the pickle test."""

    x: int
    y: int = 0
    tags: tuple[str, ...] = field(default_factory=tuple)


class Point3(Point):
    """A subclass for the pickle test."""

    z: int = 0


@pytest.mark.parametrize("made", [Point(1), Point(1, 2, ("a",)), Point3(1, z=3)], ids=repr)
def test_pickling_and_copying_round_trip(made: Point) -> None:
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(made, protocol=protocol))
        assert back == made and type(back) is type(made) and repr(back) == repr(made)
        with pytest.raises(AttributeError):
            back.x = 5  # type: ignore[misc]
    assert copy.copy(made) == made == copy.deepcopy(made)
    assert match_point(made) == made.x


def match_point(made: Point) -> int:
    match made:
        case Point(x, y):
            return x + 0 * y
    return -1


# -- the model's classes ------------------------------------------------------------------------------------------


def test_the_models_value_classes_are_records() -> None:
    from strawpot.install import queries
    from strawpot.model import install_record, installed, lockfile, manifest, project_tables

    classes = [lockfile.LockedFile, lockfile.LockedDependency, lockfile.LockedTool, lockfile.LockedSigner,
               lockfile.LockedPackage, lockfile.LockedTrust, lockfile.Lockfile, queries.Root, queries.Outdated,
               manifest.ManifestEntry, project_tables.Mistyped, install_record.RecordedFile,
               install_record.InstallRecord, installed.Mismatch, installed.InstalledPackage]
    for cls in classes:
        assert issubclass(cls, Record) and not dataclasses.is_dataclass(cls), cls.__name__
        assert cls.__doc__, cls.__name__
    assert valueclass.FrozenRecordError.__mro__[1] is AttributeError


def test_the_lock_round_trips_through_its_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tomllib

    from strawpot.model.kinds import Kind
    from strawpot.model.lockfile import (
        LockedDependency,
        LockedFile,
        LockedPackage,
        LockedSigner,
        LockedTool,
        LockedTrust,
        Lockfile,
    )

    sha = "a" * 64
    lock = Lockfile((
        LockedPackage(Kind.ROLE, "reviewer", "1.0.0", "http://r", sha, 3, files=(LockedFile("ROLE.md", sha, 3),),
                      dependencies=(LockedDependency(Kind.SKILL, "x", "^1"),), default_agent="a",
                      signer=LockedSigner("ed25519:" + "b" * 64, "me"), log_index=4),
        LockedPackage(Kind.AGENT, "a", "0.1.0", "http://r", sha, 9, files=(LockedFile("bin/run", sha, 9, True),),
                      tools=(LockedTool("git", "Git", {"linux": "apt install git"}),)),
        LockedPackage(Kind.SKILL, "x", "1.2.0", "http://r", None, None),
    ), manifest_hash="sha256:" + "0" * 64, generated_by="strawpot test", trust=(LockedTrust("agent:a", (sha,)),))
    monkeypatch.setenv("STRAWPOT_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "strawpot.lock"
    lock.write(path)
    for remember in (False, True, True):  # the file's parse, then the remembered one (kept by the first True)
        loaded = Lockfile.load(path, remember=remember)
        assert loaded == lock and loaded.dumps() == lock.dumps()  # (unhashable: a tool's install is a dict)
        assert [p.name for p in loaded.packages] == ["x", "reviewer", "a"]  # __post_init__ sorted them
        assert loaded.get(Kind.SKILL, "x") == lock.packages[0]
    assert list((tmp_path / "cache").rglob("*.json")), "the second load was not served from the cache"
    assert Lockfile.from_dict(tomllib.loads(lock.dumps())) == lock
    changed = replace(lock, generated_by="other")
    assert changed != lock and changed.get(Kind.ROLE, "reviewer") is not None  # __post_init__ ran again
    assert pickle.loads(pickle.dumps(lock)) == lock
