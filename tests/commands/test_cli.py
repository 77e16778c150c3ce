"""The command line as a whole: help groups, --version, the exit-code table, and no traceback on expected failures."""

from __future__ import annotations

import importlib
import os
import re
import socket
import subprocess
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

import pytest
import rich_click as click

from strawpot import __version__, cli, cli_group
from strawpot.model import errors
from tests._cli import strawpot

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
DOCUMENTED = {
    0: "ok", 1: "error", 2: "usage", 3: "resolution conflict", 4: "lock out of date",
    5: "integrity failure", 6: "registry unreachable", 7: "missing tool, agent or environment variable",
}
ERROR_CLASSES = [
    (errors.StrawpotError, 1), (errors.UsageError, 2), (errors.ConflictError, 3), (errors.LockOutdated, 4),
    (errors.IntegrityFailure, 5), (errors.RegistryUnreachable, 6), (errors.MissingToolError, 7),
]


def strawpot_cli(*args: str, cwd: Path, env: dict[str, str] | None = None, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """`strawpot ARGS` as a new user: no STRAWPOT_ or STRAWHUB_ variables, a home, config and cache under `cwd`."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("STRAWPOT_", "STRAWHUB_"))}
    base.update(HOME=str(cwd), STRAWPOT_CONFIG_DIR=str(cwd / ".config"), STRAWPOT_CACHE_DIR=str(cwd / ".cache"),
                STRAWPOT_HOME=str(cwd / ".global"), NO_COLOR="1", COLUMNS="200", **(env or {}))
    return strawpot(*args, cwd=cwd, env=base, input=input, timeout=120)


def modules() -> list[str]:
    return cli_group._command_modules()


# -- help and version -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", modules())
def test_every_command_module_exports_command_and_a_known_section(name: str) -> None:
    module = importlib.import_module(f"strawpot.commands.{name}")
    assert isinstance(module.command, click.Command)
    assert module.SECTION in cli_group.SECTIONS
    assert (module.__doc__ or "").strip() and "\n" not in module.__doc__.strip(), "one-line module docstring"


def sections_of(text: str, title: str, row: str) -> dict[str, list[str]]:
    """The command names listed under each section title of a help text."""
    groups: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if found := re.match(title, line):
            current = found.group(1)
            groups[current] = []
        elif current and (named := re.match(row, line)):
            groups[current].append(named.group(1))
    return {k: v for k, v in groups.items() if k != "Options"}


def test_help_groups_every_command_under_its_section(tmp_path: Path) -> None:
    """To a pipe the help is plain text from the command table; on a terminal rich-click draws the same sections."""
    result = strawpot_cli("--help", cwd=tmp_path)
    assert result.returncode == 0
    plain = sections_of(result.stdout, r"([A-Z]\w+):$", r"  ([a-z][a-z-]*) ")
    expected: dict[str, list[str]] = {}
    for name in modules():
        section = importlib.import_module(f"strawpot.commands.{name}").SECTION
        expected.setdefault(cli_group.SECTIONS[section], []).append(name.replace("_", "-"))
    assert plain == expected
    assert {"login", "logout", "publish", "validate", "whoami", "yank"} <= set(plain["Publishing"])
    assert "Exit codes: 0 ok, 1 error, 2 usage, 3 resolution conflict, 4 lock out of date," in result.stdout
    drawn = strawpot_cli("--help", cwd=tmp_path, env={"FORCE_COLOR": "1"})
    text = re.sub(r"\x1b\[[0-9;]*m", "", drawn.stdout)
    assert drawn.returncode == 0 and "╭─ Packages ─" in text
    assert sections_of(text, r"╭─ (\w+) ─", r"│ ([a-z][a-z-]*) ") == plain
    assert " ".join(result.stdout.split()).count("Exit codes: 0 ok") == 1


@pytest.mark.parametrize("name", modules())
def test_every_command_has_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([name.replace("_", "-"), "--help"]) == 0
    out = capsys.readouterr().out
    assert f"Usage: strawpot {name.replace('_', '-')}" in out


def _commands() -> list[tuple[str, click.Command]]:
    """Every command and subcommand, by the words that run it."""
    found = []
    for name in modules():
        command = importlib.import_module(f"strawpot.commands.{name}").command
        found.append((name, command))
        if isinstance(command, click.Group):
            found += [(f"{name} {sub}", each) for sub, each in command.commands.items()]
    return found


def test_project_help_says_the_project_is_found_upward() -> None:
    """Every --project that finds the project from the current folder says so (init makes one where it is)."""
    helps = {name: param.help or "" for name, command in _commands()
             for param in command.params if "--project" in getattr(param, "opts", [])}
    assert len(helps) > 20
    wrong = [name for name, text in helps.items()
             if name != "init" and ("default: the current folder)" in text or "upward" not in text)]
    assert not wrong, wrong


def test_version(tmp_path: Path) -> None:
    result = strawpot_cli("--version", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == f"strawpot, version {__version__}"
    assert __version__ == metadata.version("strawpot")


# -- the exit-code table ----------------------------------------------------------------------------------


def test_exit_code_table_matches_the_design_and_the_error_classes() -> None:
    assert set(errors.EXIT_CODES) == set(DOCUMENTED)
    assert {cls.exit_code for cls, _ in ERROR_CLASSES} == set(range(1, 8))
    for cls, code in ERROR_CLASSES:
        assert cls.exit_code == code
        assert issubclass(cls, errors.StrawpotError)
    doc = " ".join((cli_group.cli.help or "").split())
    table = ", ".join(f"{code} {text}" for code, text in DOCUMENTED.items())
    assert f"Exit codes: {table}." in doc
    for cls, code in ERROR_CLASSES:  # the tree drawn in the module docstring agrees
        assert f"{cls.__name__} ({code})" in (errors.__doc__ or "")


@pytest.fixture
def raising(monkeypatch: pytest.MonkeyPatch) -> list[BaseException]:
    """A `boom` command that raises whatever the test puts in the list."""
    to_raise: list[BaseException] = []

    @click.command()
    def boom() -> None:
        raise to_raise[0]

    real_modules, real_load = cli_group._command_modules, cli_group._load
    monkeypatch.setattr(cli_group, "_command_modules", lambda: [*real_modules(), "boom"])
    monkeypatch.setattr(cli_group, "_load", lambda name: SimpleNamespace(command=boom, SECTION="other") if name == "boom" else real_load(name))
    return to_raise


@pytest.mark.parametrize(("cls", "code"), ERROR_CLASSES)
def test_main_maps_each_error_to_its_code_with_one_error_line(
    raising: list[BaseException], capsys: pytest.CaptureFixture[str], cls: type[errors.StrawpotError], code: int
) -> None:
    raising.append(cls("something [specific] went wrong", hint="do [this]"))
    assert cli.main(["boom"]) == code
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "error: something [specific] went wrong\nhint: do [this]\n"


@pytest.mark.parametrize(("exc", "code"), [(KeyboardInterrupt(), 130), (click.exceptions.Abort(), 130), (BrokenPipeError(), 1)])
def test_interrupts(raising: list[BaseException], capsys: pytest.CaptureFixture[str], exc: BaseException, code: int) -> None:
    raising.append(exc)
    assert cli.main(["boom"]) == code
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["no-such-command"], ["validate"], ["publish", "--no-such-flag", "."], ["yank", "skill"]])
def test_usage_errors_are_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == 2
    assert "Traceback" not in capsys.readouterr().err


# -- no traceback for an expected failure, through a real subprocess -------------------------------------------


def _closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


CLOSED = "http://closed-port"  # a registry address nothing listens on, chosen when the test runs: test ids stay the
# same in every process, as pytest-xdist requires of its workers' collections
FAILURES: list[tuple[list[str], dict[str, str], str, int | None]] = [
    # (argv, extra env, setup, expected exit code or None for "any documented failure")
    (["validate", str(FIXTURES / "broken" / "bad-skill")], {}, "", 2),
    (["validate", str(FIXTURES / "broken" / "bad-yaml")], {}, "", 2),
    (["validate", str(FIXTURES / "broken" / "not-utf8")], {}, "", 2),
    (["validate", "/no/such/package"], {}, "", 2),
    (["validate", "--run-wrapper", str(FIXTURES / "skills" / "git-workflow")], {}, "", 2),
    (["publish", str(FIXTURES / "broken" / "bad-agent"), "--registry", CLOSED], {"STRAWPOT_TOKEN": "sh_x"}, "", 2),
    (["publish", str(FIXTURES / "skills" / "git-workflow"), "--registry", CLOSED], {}, "", 1),
    (["publish", str(FIXTURES / "skills" / "git-workflow"), "--registry", "ftp://x"], {}, "", 2),
    (["whoami", "--registry", CLOSED], {"STRAWPOT_TOKEN": "sh_x"}, "", 6),
    (["whoami", "--registry", CLOSED], {}, "broken-config", 2),
    (["login", "--registry", CLOSED, "--token-stdin"], {}, "", 6),
    (["yank", "gadget", "x", "1.0.0", "--registry", CLOSED], {"STRAWPOT_TOKEN": "sh_x"}, "", 2),
    (["install", "skill", "git-workflow", "--registry", CLOSED], {}, "", 6),
    (["install", "--frozen"], {}, "", None),
    (["lock"], {}, "broken-manifest", 2),
    (["verify"], {}, "", None),
    (["start"], {}, "", None),
]


@pytest.mark.parametrize(("argv", "extra", "setup", "code"), FAILURES, ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_expected_failures_print_an_error_not_a_traceback(
    tmp_path: Path, argv: list[str], extra: dict[str, str], setup: str, code: int | None
) -> None:
    if setup == "broken-config":
        (tmp_path / ".config").mkdir()
        (tmp_path / ".config" / "config.toml").write_text("[tokens\n")
    if setup == "broken-manifest":
        (tmp_path / "strawpot.toml").write_text("[skills]\nx = 3\n")
    closed = _closed_port()
    result = strawpot_cli(*[closed if arg == CLOSED else arg for arg in argv], cwd=tmp_path, env=extra,
                          input="sh_token\n")
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    if code is None:
        assert result.returncode in set(DOCUMENTED) - {0}, (result.returncode, result.stderr)
    else:
        assert result.returncode == code, result.stderr
    assert re.search(r"^(error: |Error: |Usage: |\s*Usage: )", result.stderr, re.MULTILINE), result.stderr


# -- "did you mean": one helper for commands, kinds and slugs (issue 30, item 11) --------------------------------

@pytest.mark.parametrize(("argv", "said"), [
    (["instal"], ["error: unknown command 'instal'", "hint: did you mean `strawpot install`?"]),
    (["install", "skil", "x"], ["error: unknown package kind 'skil'; did you mean skill? "
                                "(the kinds: skill, role, agent, memory, integration)"]),
    (["add"], ["error: `strawpot add` needs the packages to work on, as KIND SLUG pairs",
               "hint: e.g. `strawpot add skill git-workflow`; `strawpot add --help` shows how to use it"]),
    (["install", "--zzz"], ["error: unknown option '--zzz'",
                                     "hint: `strawpot install --help` shows how to use it"]),
    (["install", "--dryrun"], ["error: unknown option '--dryrun'", "hint: did you mean `--dry-run`?"]),
    (["registry", "tokn"], ["error: unknown command 'tokn'", "hint: did you mean `strawpot registry token`?"]),
])
def test_usage_errors_are_one_line_with_the_nearest_name(tmp_path: Path, argv: list[str], said: list[str]) -> None:
    result = strawpot_cli(*argv, cwd=tmp_path)
    assert (result.returncode, result.stderr.splitlines()) == (2, said), result.stderr


def test_did_you_mean_is_one_rule() -> None:
    from strawpot.model.suggest import closest, did_you_mean

    assert closest("git-worflow", ["git-workflow", "github-pr", "code-style"]) == "git-workflow"
    assert closest("install", ["install", "uninstall"]) == "uninstall"  # never the word itself
    assert closest("zzz", ["install", "publish"]) is None
    assert did_you_mean("instal", ["install"], show="`strawpot {}`") == "did you mean `strawpot install`?"
    assert did_you_mean("zzz", ["install"]) is None


def test_an_unreachable_registry_is_named_once(tmp_path: Path) -> None:
    result = strawpot_cli("install", "skill", "git-workflow", "--registry", CLOSED, cwd=tmp_path)
    assert result.returncode == 6, result.stderr
    [error] = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert error.startswith(f"error: registry unreachable at {CLOSED}/api/v1/"), error
    assert error.count(CLOSED) == 1, error
