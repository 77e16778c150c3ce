"""The early answer (strawpot.commands._early) reads a command line as click does or leaves it to click: each row of
its table is its click command's options, its parse sets what click sets, and its answers are click's, byte for byte."""

from __future__ import annotations

import importlib
import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from strawpot.commands import _early as early
from tests._cli import strawpot, strawpot_here

READ_ONLY = ("tree", "why", "list", "verify", "sessions")


def _command(name: str) -> click.Command:
    """The click command a row stands for (`config show`: the `show` command of the `config` group)."""
    first, *rest = name.split()
    command: click.Command = importlib.import_module(f"strawpot.commands.{first}").command
    for word in rest:
        assert isinstance(command, click.Group)
        command = command.commands[word]
    return command


def _options(command: click.Command) -> dict[str, click.Option]:
    """Every spelling of every option of `command` (`--yes` and `-y` alike), with its parameter."""
    return {spelling: p for p in command.params if isinstance(p, click.Option)
            for spelling in [*p.opts, *p.secondary_opts]}


# -- (a) each row is its click command ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(early.TABLE))
def test_each_row_names_its_click_commands_options_and_arguments(name: str) -> None:
    command = _command(name)
    flags, values, arguments = early.TABLE[name]
    options = _options(command)
    for spelling, param in flags.items():
        assert spelling in options, f"{name} {spelling}: not an option of the click command"
        option = options[spelling]
        assert option.name == param and option.is_flag and not option.count and not option.multiple, spelling
        assert spelling in option.opts, spelling  # (a `--no-x` spelling sets False; the early parse sets True)
    for spelling, param in values.items():
        assert spelling in options, f"{name} {spelling}: not an option of the click command"
        option = options[spelling]
        assert option.name == param and not option.is_flag and not option.count, spelling
        assert not option.multiple and option.nargs == 1, spelling
        if param == "project":  # the early parse checks the folder as this type does, and makes the same Path
            kind = option.type
            assert isinstance(kind, click.Path) and kind.exists and not kind.file_okay and kind.dir_okay, spelling
            assert kind.readable and kind.type is Path and not kind.resolve_path and not kind.allow_dash, spelling
        else:
            assert option.type is click.STRING, spelling
    clicks = [p for p in command.params if isinstance(p, click.Argument)]
    assert len(arguments) <= len(clicks)
    for (argument, required), param in zip(arguments, clicks, strict=False):
        assert (param.name, param.required, param.nargs) == (argument, required, 1), param.name
    # an argument the row leaves out is one click may go without (the early parse refuses any it does not name)
    assert not any(p.required for p in clicks[len(arguments):]), [p.name for p in clicks[len(arguments):]]
    # an environment variable click reads for an option is one the early answer sends to click
    assert {p.envvar for p in command.params if isinstance(p, click.Option) and p.envvar} <= early.CLICK_ONLY_ENV
    assert not (command.context_settings or {}).get("auto_envvar_prefix")


def test_the_global_options_are_the_groups() -> None:
    from strawpot.cli_group import cli

    options = _options(cli)
    for spelling, param in early.GLOBAL_FLAGS.items():
        assert options[spelling].name == param and options[spelling].is_flag, spelling
    for spelling, param in early.GLOBAL_VALUES.items():
        assert options[spelling].name == param and not options[spelling].is_flag, spelling
    color = options["--color"]
    assert isinstance(color.type, click.Choice) and tuple(color.type.choices) == early.COLORS
    assert color.type.case_sensitive and color.default == "auto"
    # every global option is in the tables but --version (and click's --help), which the entry point or click answer
    named = set(early.GLOBAL_FLAGS) | set(early.GLOBAL_VALUES)
    assert set(options) - named == {"--version"}
    assert not (cli.context_settings or {}).get("auto_envvar_prefix")
    assert not any(isinstance(p, click.Option) and p.envvar for p in cli.params)


# -- (b) what the early parse reads is what click reads ------------------------------------------------------------


POSITIONALS = {"install": [[], ["skill", "x"]], "tree": [[]], "verify": [[]], "sessions": [[]], "why": [["skill", "x"], ["role", "-"]],
               "list": [[], ["skill"]], "config": [[]], "config show": [[]]}
GLOBALS = [[], ["-q"], ["--verbose", "--quiet"], ["--color", "never"], ["--color=always", "-v"]]


def _spellings(name: str, folder: Path) -> list[list[str]]:
    """Each option of the row as it may be written: a flag; a value option with its value apart or after `=`."""
    flags, values, _ = early.TABLE[name]
    samples = {"project": str(folder), "registry": "http://hub.test"}
    written = [[flag] for flag in flags]
    for spelling, param in values.items():
        written.append([spelling, samples[param]])
        if spelling.startswith("--"):
            written.append([f"{spelling}={samples[param]}"])
    return written


def _argument_sets(name: str, folder: Path) -> Iterator[list[str]]:
    each = _spellings(name, folder)
    option_sets = [[], *each, *([*a, *b] for a, b in itertools.combinations(each, 2))]
    for positional in POSITIONALS[name]:
        for options in option_sets:
            yield [*options, *positional]
            if positional and options:
                yield [*positional[:1], *options, *positional[1:]]  # click takes arguments between options


@pytest.mark.parametrize("name", sorted(early.TABLE))
def test_the_early_parse_sets_what_click_sets(name: str, tmp_path: Path) -> None:
    command = _command(name)
    flags, values, _ = early.TABLE[name]
    answered = 0
    for args in _argument_sets(name, tmp_path):
        found = early.parse([*name.split(), *args])
        try:
            params = command.make_context(name.split()[-1], list(args)).params
        except click.UsageError:
            assert found is None, args  # click refuses it: so does the early parse
            continue
        if found is None:
            continue
        answered += 1
        command_word, given, global_given = found
        assert (command_word, global_given) == (name, {}), args
        assert given == {key: params[key] for key in given}, args
        # every option and argument on the line was read (nothing given is left at click's default)
        words = {a.partition("=")[0] for a in args if a.startswith("-") and a != "-"}
        assert {flags.get(w) or values.get(w) for w in words} <= set(given), args
    assert answered > len(_spellings(name, tmp_path)), "the early parse answered almost nothing"


@pytest.mark.parametrize("globals_", GLOBALS, ids=" ".join)
def test_the_early_parse_reads_the_global_options_as_the_group(globals_: list[str], tmp_path: Path) -> None:
    from strawpot.cli_group import cli

    for name in sorted(early.TABLE):
        args = [*globals_, *name.split(), *POSITIONALS[name][-1]]
        found = early.parse(args)
        assert found is not None, args
        params = cli.make_context("strawpot", list(args)).params
        assert found[2] == {key: params[key] for key in found[2]}, args
        assert set(found[2]) == {early.GLOBAL_FLAGS.get(a) or early.GLOBAL_VALUES.get(a.partition("=")[0])
                                 for a in globals_ if a.startswith("-")}, args


def test_a_line_the_row_does_not_read_whole_goes_to_click(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for line in ["list --remote", "list --limit 3", "list --registry http://x", "sessions --prune", "sessions show X",
                 "sessions --dry-run", "sessions -g", "why skill", "why", "why skill x y", "tree extra-arg",
                 "tree --project /no/such/dir", "tree -p /no/such/dir", "tree -p=.", "tree --project", "tree -p -g",
                 "--color pink tree", "--color=pink tree", "--color", "tree --", "-- tree", "-qv tree", "tree -gj",
                 "tree -q", "tree --json=1", "tree --help", "tree -h", "--help tree", "--version tree", "lock",
                 "config show extra", "config --json show", "tree --project=", "list skill role", "verify --deep", "-q", ""]:
        args = line.split()
        assert early.parse(args) is None, line
        assert early.answer(args) is None, line


def test_a_project_that_is_not_a_folder_goes_to_click(tmp_path: Path) -> None:
    """click names the missing folder, or the file given as one; the early parse leaves both to it."""
    file = tmp_path / "file"
    file.write_text("")
    for given in (file, tmp_path / "missing"):
        assert early.parse(["tree", "-p", str(given)]) is None
        with pytest.raises(click.BadParameter):
            _command("tree").make_context("tree", ["-p", str(given)])
    assert early.parse(["tree", "-p", str(tmp_path)]) == ("tree", {"project": tmp_path}, {})


def test_an_environment_variable_click_reads_sends_a_read_only_command_to_click(monkeypatch: pytest.MonkeyPatch,
                                                                                tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name in sorted(early.CLICK_ONLY_ENV):
        monkeypatch.setenv(name, "1")
    assert early.parse(["sessions"]) is not None
    assert early.answer(["sessions"]) is None


# -- (d) in this process: the early answer prints and exits as click ----------------------------------------------


@pytest.fixture(scope="module")
def live_project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """A project installed from a live registry (a role with skills and an agent, a skill of its own) with one run
    recorded, and the environment (cache, config and global folders) it was installed with."""
    from orchestrator.run_record import AgentRecord, RunRecord, State, write_run
    from tests._live_registry import start_registry
    from tests.install.conftest import FIXTURE_ORDER, FIXTURES, Registry

    base = tmp_path_factory.mktemp("early")
    env = {"STRAWPOT_CACHE_DIR": str(base / "cache"), "STRAWPOT_CONFIG_DIR": str(base / "config"),
           "STRAWPOT_HOME": str(base / "global"), "STRAWPOT_DATA_DIR": str(base / "data")}
    root = base / "proj"
    root.mkdir()
    with start_registry(base) as live:
        registry = Registry(live, base / "packages")
        for rel in FIXTURE_ORDER:
            registry.publish_folder(FIXTURES / rel, version="0.1.0" if rel.startswith("agents/") else None)
        registry.client.close()
        done = strawpot_here("install", "role", "reviewer", "skill", "git-workflow", cwd=root,
                             extra_env={**env, "STRAWPOT_REGISTRY_URL": live.url})
        assert done.returncode == 0, done.stderr
    started = 1_700_000_000.0  # long ago: shown as a date, the same in both answers
    agent = AgentRecord("a1", "reviewer", "stub-agent", None, 0, "look", str(root), state=State.SUCCEEDED, exit_code=0)
    write_run(root / ".strawpot" / "sessions" / "run-1",
              RunRecord("run-1", "reviewer", "look at it", State.SUCCEEDED, started, exit_code=0, ended_at=started + 5,
                        agents=(agent,)))
    yield root, env


def _same_process_state() -> None:
    """A fresh process's consoles (made on first use, for the streams of the moment)."""
    from strawpot import console

    for made in (console.out_console, console.err_console):
        object.__setattr__(made, "_real", None)
        object.__setattr__(made, "_quiet", False)


ANSWERED = [["tree"], ["why", "skill", "code-review"], ["why", "skill", "absent"], ["why", "agent", "stub-agent"],
            ["list"], ["list", "skill"], ["verify"], ["sessions"], ["-q", "tree"], ["-q", "verify"],
            ["--color", "never", "list"], ["why", "gadget", "x"]]


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("args", ANSWERED, ids=" ".join)
def test_the_early_answer_prints_and_exits_as_click(live_project: tuple[Path, dict[str, str]], args: list[str],
                                                   as_json: bool, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from strawpot.cli_group import run

    root, env = live_project
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for name in ("NO_COLOR", "FORCE_COLOR", "STRAWPOT_REGISTRY_URL", *early.CLICK_ONLY_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(root)
    line = [*args, "--json"] if as_json else list(args)
    outcomes = []
    for answer in (early.answer, run):
        _same_process_state()
        for name in ("NO_COLOR", "FORCE_COLOR"):  # --color sets one for the process
            monkeypatch.delenv(name, raising=False)
        capsys.readouterr()
        code = answer(list(line))
        out, err = capsys.readouterr()
        outcomes.append((code, out, err))
    _same_process_state()
    assert outcomes[0][0] is not None, "the early answer left it to click"
    assert outcomes[0] == outcomes[1]
    code, out, err = outcomes[0]
    assert "Traceback" not in err
    expected = 2 if args[-1] in ("absent", "x") else 0
    assert code == expected, err
    assert out or err or "-q" in args  # something was said (quiet: nothing on stderr)


def test_the_live_project_has_what_the_comparisons_need(live_project: tuple[Path, dict[str, str]]) -> None:
    """The comparisons above print a tree with wildcard-free roles, a table of packages and one of runs."""
    root, env = live_project
    done = strawpot_here("list", cwd=root, extra_env=env)
    assert done.returncode == 0 and "reviewer" in done.stdout and "git-workflow" in done.stdout, done.stderr
    assert len(done.stdout.splitlines()) >= 6
    runs = strawpot_here("sessions", cwd=root, extra_env=env)
    assert runs.returncode == 0 and "run-1" in runs.stdout, runs.stderr


# -- (e) the real program: no click, rich_click or rich -----------------------------------------------------------


def _imported(done: Any) -> set[str]:
    loaded = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", done.stderr, re.MULTILINE))
    assert "strawpot" in loaded, "the import profile was not read"
    return loaded


@pytest.mark.parametrize("args", [["tree"], ["why", "skill", "code-review"], ["list"],
                                  ["list", "role", "--json"], ["verify"], ["sessions"], ["tree", "--json"]],
                         ids=" ".join)
def test_the_read_only_commands_to_a_pipe_import_no_click_or_rich(live_project: tuple[Path, dict[str, str]],
                                                                  args: list[str]) -> None:
    root, env = live_project
    done = strawpot(*args, cwd=root, extra_env={**env, "PYTHONPROFILEIMPORTTIME": "1", "NO_COLOR": "1",
                                                 "STRAWPOT_REGISTRY_URL": "http://127.0.0.1:9"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout or args == ["verify"], "nothing printed"  # (verify says "ok" on stderr)
    loaded = _imported(done)
    assert sorted(m for m in loaded if m.split(".")[0] in ("click", "rich_click", "rich")) == []
    assert "strawpot.commands._early" in loaded and "strawpot.cli_group" not in loaded


def test_an_early_answers_error_to_a_pipe_is_one_line_without_click_or_rich(tmp_path: Path) -> None:
    """A read-only command's expected failure reaches the user as click's path says it (one line, a hint, the exit
    code), and to a pipe needs neither click nor rich."""
    (tmp_path / "strawpot.toml").write_text("", encoding="utf-8")
    done = strawpot("why", "skill", "absent", cwd=tmp_path, extra_env={"PYTHONPROFILEIMPORTTIME": "1",
                                                                        "STRAWPOT_REGISTRY_URL": "http://127.0.0.1:9"})
    loaded = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", done.stderr, re.MULTILINE))
    said = [line for line in done.stderr.splitlines() if not line.startswith("import time:")]
    assert done.returncode == 2 and said[0].startswith("error: ") and "no lockfile" in said[0], said
    assert said[1].startswith("hint: "), said
    assert not {m for m in loaded if m.split(".")[0] in ("click", "rich_click", "rich")}, "the error needed click"
