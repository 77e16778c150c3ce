"""The early answer: a no-op install and the read-only commands, their command line read without click."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing is not imported on this path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

# Each option as click spells it, with the name of the click parameter it sets. tests/commands/test_early_answer.py
# derives these tables from the click commands, so an option added there and not here fails it. An option a table
# does not name (help, JSON for install, `list --remote`, ...) sends the whole command line to click, which also
# reports every mistake.
GLOBAL_FLAGS = {"-q": "quiet", "--quiet": "quiet", "-v": "verbose", "--verbose": "verbose"}
GLOBAL_VALUES = {"--color": "color"}
COLORS = ("auto", "always", "never")
INSTALL_FLAGS = {"--frozen": "frozen", "--locked": "locked", "--skip-tools": "skip_tools", "--offline": "offline",
                 "-y": "yes", "--yes": "yes", "-g": "is_global", "--global": "is_global", "--json": "as_json",
                 "--dry-run": "dry_run", "--no-save": "no_save", "--ignore-scripts": "ignore_scripts",
                 "--install-tools": "install_tools", "--trust-project": "trust_project"}
INSTALL_VALUES = {"--project": "project", "-p": "project", "--registry": "registry"}
# what a bare install may carry and still be answered "nothing to do" by the no-op check (JSON wants the outcome)
NOOP_INSTALL = frozenset({"frozen", "locked", "skip_tools", "offline", "yes", "is_global", "project", "registry"})
# a command's positional arguments that are any number of words, as click's nargs=-1 (a tuple)
VARIADIC = {"install": "packages"}
PROJECT_FLAGS = {"-g": "is_global", "--global": "is_global", "--json": "as_json"}
PROJECT_VALUES = {"--project": "project", "-p": "project"}
CONFIG_FLAGS = {"--origin": "with_origin", "--json": "as_json"}
CONFIG_VALUES = {**PROJECT_VALUES, "--registry": "registry"}
# command: (flags, values, positional arguments as (parameter, required)); `sessions` answers early only as the list
TABLE: dict[str, tuple[dict[str, str], dict[str, str], tuple[tuple[str, bool], ...]]] = {
    "install": (INSTALL_FLAGS, INSTALL_VALUES, ()),
    "tree": (PROJECT_FLAGS, PROJECT_VALUES, ()),
    "why": (PROJECT_FLAGS, PROJECT_VALUES, (("kind", True), ("slug", True))),
    "list": (PROJECT_FLAGS, PROJECT_VALUES, (("kind", False),)),
    "verify": (PROJECT_FLAGS, PROJECT_VALUES, ()),
    "sessions": ({"--json": "as_json"}, PROJECT_VALUES, ()),
    "config": (CONFIG_FLAGS, CONFIG_VALUES, ()),  # `config` alone shows, with these options as `config show`'s
    "config show": (CONFIG_FLAGS, CONFIG_VALUES, ()),
}
CLICK_ONLY_ENV = frozenset({"STRAWPOT_TRUST_PROJECT"})  # set, click reads it as install's --trust-project


def parse(args: list[str]) -> tuple[str, dict[str, object], dict[str, object]] | None:
    """(command, its parameters, the global ones) as click would set them (flags as True; only those given), or None
    when click must read `args`: another command or option, a value click would refuse, `--`, too many arguments."""
    rest = iter(args)
    found = _global_options(rest)
    if found is None or found[0] not in TABLE:
        return None
    command, given = found
    if command == "config":
        command, rest = _config_subcommand(rest)
    flags, values, arguments = TABLE[command]
    seen: dict[str, object] = {}
    positional: list[str] = []
    for arg in rest:
        if not arg.startswith("-") or arg == "-":
            positional.append(arg)
            continue
        if arg in flags:
            seen[flags[arg]] = True
            continue
        option, equals, value = arg.partition("=")
        if option not in values or (equals and not option.startswith("--")):
            return None  # click reads `-p=x` as the value "=x"
        taken = value if equals else next(rest, None)
        if taken is None or taken.startswith("-"):
            return None
        if values[option] == "project":
            if not (os.path.isdir(taken) and os.access(taken, os.R_OK)):
                return None  # click names the missing or unreadable folder
            from pathlib import Path

            seen["project"] = Path(taken)
        else:
            seen[values[option]] = taken
    return (command, seen, given) if _take_positionals(command, arguments, positional, seen) else None


def _take_positionals(command: str, arguments: tuple[tuple[str, bool], ...], positional: list[str],
                      seen: dict[str, object]) -> bool:
    """Set the positional arguments' parameters in `seen` as click would; False when click would refuse them."""
    if command in VARIADIC:
        if positional:
            seen[VARIADIC[command]] = tuple(positional)
        return True
    if len(positional) > len(arguments) or len(positional) < sum(required for _, required in arguments):
        return False
    seen.update(zip((name for name, _ in arguments), positional, strict=False))
    return True


def _config_subcommand(rest: Iterator[str]) -> tuple[str, Iterator[str]]:
    """`config` is a group: `config show [options]`, or `config [options]` alone (which shows)."""
    first = next(rest, None)
    if first == "show":
        return "config show", rest
    return "config", iter([] if first is None else [first, *rest])


def _global_options(rest: Iterator[str]) -> tuple[str, dict[str, object]] | None:
    """The command word and the global options before it, or None on anything click must read."""
    given: dict[str, object] = {}
    for arg in rest:
        if not arg.startswith("-"):
            return arg, given
        if arg in GLOBAL_FLAGS:
            given[GLOBAL_FLAGS[arg]] = True
            continue
        option, equals, value = arg.partition("=")
        if option not in GLOBAL_VALUES:
            return None
        color = value if equals else next(rest, None)
        if color not in COLORS:
            return None
        given[GLOBAL_VALUES[option]] = color
    return None


def answer(args: list[str], *, program: bool = False) -> int | None:
    """The exit code of `args` answered here, or None when click must run them. `program`: this process is the
    `strawpot` program (an install, which may run scripts, first holds its secrets as click's path does)."""
    if any(os.environ.get(name) for name in CLICK_ONLY_ENV):
        return None
    found = parse(args)
    if found is None:
        return None
    command, params, given = found
    defer("inspect")  # dataclasses and httpx import it; ours ask it nothing (every dataclass has a docstring)
    if command == "install":
        install = bare_install(args)
        try:
            if install is not None and _noop_install(install):
                return 0
        except KeyboardInterrupt:
            sys.stderr.write("error: interrupted\n")
            return 130
        if program:
            from strawpot.model import own_secrets

            own_secrets.hold()
    from strawpot import console

    console.apply_global_options(bool(given.get("quiet")), bool(given.get("verbose")), str(given.get("color", "auto")))
    try:
        _body(command)(**params)
    except (Exception, KeyboardInterrupt) as exc:  # the ones click's path maps to a line and a code, mapped alike
        from strawpot.failures import expected

        code = expected(exc, args, lambda: command)
        if code is None:
            raise
        return code
    return 0


def _body(command: str) -> Callable[..., None]:
    """What runs `command` without click: the install's own body, or a read-only command's."""
    if command == "install":
        from strawpot.commands._install_run import install_early

        return install_early
    from strawpot.commands import _read_only

    return _read_only.BY_COMMAND[command]


def bare_install(args: list[str]) -> dict[str, object] | None:
    """The click parameters `[global flags] install [install flags]` set (the global ones too) when the no-op check
    may answer them, or None: packages to add, an option that wants more than "nothing to do" (JSON, a dry run...),
    both --frozen and --locked (click refuses the pair), or another command."""
    found = parse(args)
    if found is None or found[0] != "install" or not NOOP_INSTALL.issuperset(found[1]):
        return None
    return None if "frozen" in found[1] and "locked" in found[1] else {**found[2], **found[1]}


def _noop_install(params: dict[str, object]) -> bool:
    """True (after saying so on stderr, unless quiet) when the first step of the install pipeline
    (`strawpot.install.fastcheck.nothing_to_do`) finds nothing to do for this bare install."""
    import time
    from pathlib import Path

    from strawpot.install.fastcheck import nothing_to_do
    from strawpot.model.layout import Project
    from strawpot.model.plural import count

    started = time.perf_counter()
    project = params.get("project")
    try:
        where = Project.at(project if isinstance(project, Path) else None, is_global="is_global" in params)
        current = nothing_to_do(where, **current_question(params))
    except OSError:  # the working folder vanished, a folder cannot be read: the full path says so properly
        return False
    if current is None:
        return False
    if "quiet" not in params:
        sys.stderr.write(f"Already up to date ({count(current, 'package')}) in {time.perf_counter() - started:.2f}s\n")
    return True


def current_question(params: dict[str, object]) -> dict[str, bool]:
    """`Options.current_question()` of the options click would build from these parameters (a test holds the
    two equal; importing the options module here would add ~3 ms to a ~65 ms no-op)."""
    return {"frozen": "frozen" in params, "lock_only": False, "check_tools": "skip_tools" not in params}


def defer(name: str) -> None:
    """Stand a stub in for module `name` that imports it on first use of an attribute (importlib's LazyLoader does
    not serve here: the import system reads `__spec__` of a module already imported, which loads it)."""
    if name in sys.modules:
        return
    import _thread  # built in: threading is not imported on this path

    first_use = _thread.allocate_lock()  # an install's pool threads may ask at once: one import, one module

    class Deferred(type(sys)):  # type: ignore[misc]
        def __getattr__(self, attr: str) -> object:
            with first_use:
                real = sys.modules.get(name)
                if real is None or real is self:  # the first use: import it (a later miss is the module's own)
                    sys.modules.pop(name, None)
                    real = __import__(name)
                    self.__dict__.update(real.__dict__)
            return getattr(real, attr)

    stub = Deferred(name)
    # its spec, as importlib.util.find_spec would give it (that module is not imported on this path)
    stub.__spec__ = next(filter(None, (finder.find_spec(name, None) for finder in sys.meta_path
                                       if hasattr(finder, "find_spec"))), None)
    sys.modules[name] = stub
