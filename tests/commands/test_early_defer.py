"""`_early.defer` stands a stub in for a module until an attribute of it is used: then the module is imported, once,
and answers as if it had been imported from the start."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def python(code: str) -> subprocess.CompletedProcess[str]:
    """`code` run by a fresh interpreter of this environment (a module imported by the test process is not)."""
    return subprocess.run([sys.executable, "-P", "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=60, check=False)


def test_a_deferred_module_is_imported_on_first_use_and_is_the_real_one() -> None:
    done = python('''
        import sys
        assert "inspect" not in sys.modules and "ast" not in sys.modules, sorted(sys.modules)
        from strawpot.commands._early import defer
        defer("inspect")
        stub = sys.modules["inspect"]
        import dataclasses

        @dataclasses.dataclass(frozen=True)
        class Documented:
            """It has a docstring, so dataclasses asks inspect nothing."""
            x: int
            y: str = "y"

        assert "ast" not in sys.modules, "inspect was imported (it imports ast)"
        assert sys.modules["inspect"] is stub
        import inspect
        assert inspect is stub
        assert str(inspect.signature(lambda a, b=2, *c, d: None)) == "(a, b=2, *c, d)"
        assert "ast" in sys.modules
        real = sys.modules["inspect"]
        assert real is not stub and type(real) is type(sys) and real.__file__ == inspect.__file__
        assert real.signature is inspect.signature and real.Parameter is inspect.Parameter

        @dataclasses.dataclass
        class Undocumented:
            x: int
        assert Undocumented.__doc__ == "Undocumented(x: int)", Undocumented.__doc__
        assert str(inspect.signature(Documented)) == "(x: int, y: str = 'y') -> None"
        defer("inspect")  # already imported: left as it is
        assert sys.modules["inspect"] is real
        print("ok")
    ''')
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr


def test_a_deferred_module_is_imported_once() -> None:
    """An attribute the module lacks (feature detection: `hasattr(inspect, "markcoroutinefunction")` on 3.11) is an
    AttributeError, and imports no second copy of the module (its classes would then be two classes)."""
    done = python('''
        import sys
        from strawpot.commands._early import defer
        defer("inspect")
        import inspect
        first = inspect.Parameter
        real = sys.modules["inspect"]
        assert not hasattr(inspect, "no_such_attribute")
        assert sys.modules["inspect"] is real, "a second inspect was imported"
        assert inspect.Parameter is first and sys.modules["inspect"].Parameter is first
        print("ok")
    ''')
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr


@pytest.mark.parametrize("name", ["json", "csv"])
def test_the_stub_is_importable_and_from_imports_take_the_real_names(name: str) -> None:
    done = python(f'''
        import sys
        assert "{name}" not in sys.modules
        from strawpot.commands._early import defer
        defer("{name}")
        assert sys.modules["{name}"].__spec__.name == "{name}"
        import importlib.util
        assert importlib.util.find_spec("{name}") is not None
        from {name} import __all__ as names
        real = sys.modules["{name}"]
        assert names == real.__all__ and len(names) > 3
        print("ok")
    ''')
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr
