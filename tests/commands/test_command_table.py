"""The command table is the commands (a new command cannot be left out of it), and each command imports only what it
uses: `--version` no click, `--help` no command module, the read-only commands no network or server stack, and
each stays under a count of modules, so a regression in start-up shows up here (benchmarks/bench_startup.py times it)."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from strawpot import __version__
from strawpot.commands._early import TABLE as EARLY
from strawpot.commands._table import COMMANDS, derived
from tests._cli import strawpot, strawpot_here

# the stacks of other paths: talking to a registry, serving one, the orchestrator's gRPC and web UI
SERVER_AND_NETWORK = ("httpx", "httpcore", "hub_client", "grpc", "starlette", "uvicorn", "jinja2", "registry_server")
# (arguments, exit code, most modules imported, counted as PYTHONPROFILEIMPORTTIME lists them); measured with the
# test tools installed, plus about a tenth for library versions
READ_ONLY = [
    (["tree"], 0, 140), (["list"], 0, 140), (["verify"], 0, 170), (["sessions"], 0, 105), (["config", "show"], 0, 125),
    (["why", "skill", "absent"], 2, 125),  # its error line too is printed without click (strawpot/failures.py)
]
# what only editing strawpot.toml (tomlkit keeps its layout) or resolving (the solver) needs
EDITING_AND_SOLVING = ("tomlkit", "resolver.solver", "resolver.incompatibility", "resolver.provider")


def imported(*args: str, cwd: Path, code: int = 0, env: dict[str, str] | None = None) -> set[str]:
    done = strawpot(*args, cwd=cwd, extra_env={"PYTHONPROFILEIMPORTTIME": "1", "NO_COLOR": "1",
                                               "STRAWPOT_REGISTRY_URL": "http://127.0.0.1:9", **(env or {})})
    assert done.returncode == code, done.stderr[-3000:]
    loaded = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", done.stderr, re.MULTILINE))
    assert "strawpot" in loaded, "the import profile was not read"  # (strawpot.cli runs as __main__)
    return loaded


def heavy(loaded: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in loaded if m.split(".")[0] in names)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with an empty strawpot.toml, locked (offline: nothing to resolve; the lock made in this process)."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "strawpot.toml").write_text("", encoding="utf-8")
    done = strawpot_here("lock", cwd=root, extra_env={"STRAWPOT_REGISTRY_URL": "http://127.0.0.1:9"})
    assert done.returncode == 0 and (root / "strawpot.lock").is_file(), done.stderr
    return root


def test_the_table_is_the_commands() -> None:
    """Each command module is in the table with its section and summary; a new one is named in the failure."""
    real = derived()
    assert real == COMMANDS, "run `python -m strawpot.commands._table` and paste its table into _table.py"
    assert len(real) > 30 and "install" in real and "config" in real


def test_version_answers_before_click(tmp_path: Path) -> None:
    loaded = imported("--version", cwd=tmp_path)
    assert sorted(m for m in loaded if m.startswith(("strawpot", "click", "rich"))) == ["strawpot"]
    assert "typing" not in loaded and "pathlib" not in loaded


def test_version_says_what_clicks_version_option_says(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from strawpot.cli_group import run

    assert run(["--version"]) == 0
    assert strawpot("--version", cwd=tmp_path).stdout == capsys.readouterr().out == f"strawpot, version {__version__}\n"


def test_help_to_a_pipe_lists_every_command_without_click(tmp_path: Path) -> None:
    loaded = imported("--help", cwd=tmp_path)
    assert sorted(m for m in loaded if m.startswith("strawpot.")) == [
        "strawpot.commands", "strawpot.commands._help", "strawpot.commands._table"]
    assert heavy(loaded, ("click", "rich_click", "rich", "typing", "pathlib", "re")) == []


def test_help_on_a_terminal_lists_every_command_without_importing_one(tmp_path: Path) -> None:
    loaded = imported("--help", cwd=tmp_path, env={"FORCE_COLOR": "1"})
    # the entry point, the early answer's parse, the group, the table, and what every command's run needs (its
    # secrets held)
    assert sorted(m for m in loaded if m.startswith("strawpot.")) == [
        "strawpot.cli_group", "strawpot.commands", "strawpot.commands._early", "strawpot.commands._help",
        "strawpot.commands._table", "strawpot.model", "strawpot.model.child_env", "strawpot.model.own_secrets"]
    assert heavy(loaded, (*SERVER_AND_NETWORK, "resolver", "tomlkit", "yaml", "orchestrator")) == []
    assert len(loaded) <= 285, len(loaded)


def test_the_plain_helps_options_are_the_groups() -> None:
    """The plain help's options and description are the click group's (rich-click draws those on a terminal)."""
    from strawpot.cli_group import cli
    from strawpot.commands._help import DESCRIPTION, ROOT_OPTIONS

    derived_options = []
    # the context click makes for a run (its help option names come from context_settings; a bare Context has
    # only --help, which click caches on the group: the result would depend on the tests run before)
    for param in cli.get_params(cli.make_context("strawpot", [], resilient_parsing=True)):
        names = ", ".join(sorted((*param.opts, *param.secondary_opts), key=len))
        metavar = "[" + "|".join(param.type.choices) + "]" if isinstance(param.type, click.Choice) else ""
        text = (param.help or "") + (f"  [default: {param.default}]" if param.show_default else "")
        derived_options.append((names, metavar, text))
    assert tuple(derived_options) == ROOT_OPTIONS
    assert cli.help == DESCRIPTION


@pytest.mark.parametrize(("args", "code", "most"), READ_ONLY, ids=[" ".join(a) for a, _, _ in READ_ONLY])
def test_read_only_commands_import_no_network_or_server(project: Path, args: list[str], code: int, most: int) -> None:
    loaded = imported(*args, cwd=project, code=code)
    assert heavy(loaded, SERVER_AND_NETWORK) == []
    assert sorted(loaded & set(EDITING_AND_SOLVING)) == []
    # a command module is imported by importlib (which the profile does not list), its own imports are listed
    others = {f"strawpot.commands.{name.replace('-', '_')}" for name in COMMANDS} - {f"strawpot.commands.{args[0]}"}
    assert sorted(others & loaded) == [], "only the command that runs is imported"
    assert len(loaded) <= most, f"{len(loaded)} modules imported (at most {most})"


@pytest.mark.parametrize("args", [["tree"], ["config", "show"], ["verify"]], ids=" ".join)
def test_plain_lines_to_a_pipe_import_no_rich(project: Path, args: list[str]) -> None:
    """Plain lines to a pipe or file need no rich (on a terminal the line is rich's, in colour); the commands the
    early answer runs (strawpot.commands._early) need no click either."""
    loaded = imported(*args, cwd=project)
    assert heavy(loaded, ("rich",)) == []
    assert ("rich_click" in loaded) is (args[0] not in EARLY), "the early answer runs without click"


# a cold `install` resolves and talks to the registry (hub_client, httpx, the solver; a new strawpot.toml of plain
# specifiers is written without tomlkit):
# it is counted apart from the read-only commands, and the path-source, workspace and publishing readers stay out,
# as does the agent tools' module under --skip-tools, and the package model's readers (an archive's reader needs only
# its limits: strawpot.model.package_limits), inspect (dataclasses and httpx import it, and ask it nothing), and what
# runs an install script or probes bwrap (subprocess) when no package has a script, and difflib (a mistake's "did
# you mean")
COLD_INSTALL_MOST = 327  # 297 measured (no package readers, inspect, tomlkit, subprocess, difflib or idna codec)
COLD_INSTALL_NEVER = ("strawpot.publishing", "strawpot.model.workspace", "strawpot.install.tools", "httpcore", "idna",
                      "grpc", "registry_server", "starlette", "rich.", "strawpot.model.package_fields",
                      "strawpot.model.package_types", "strawpot.model.params", "inspect", "tomlkit",
                      "subprocess", "strawpot.install.scripts", "difflib", "encodings.idna", "stringprep")


def test_a_cold_install_imports_what_it_uses(tmp_path: Path) -> None:
    from hub_client import HubClient
    from strawpot.publishing.prepare import prepare_upload
    from tests._live_registry import start_registry

    root = tmp_path / "proj"
    root.mkdir()
    with start_registry(tmp_path / "registry") as live, HubClient(live.url, token=live.token) as client:
        upload = prepare_upload(Path(__file__).resolve().parents[2] / "fixtures" / "skills" / "code-style")
        client.publish(upload.kind.value, upload.fields, [(f.path, f.data) for f in upload.files])
        cache = {"STRAWPOT_CACHE_DIR": str(tmp_path / "cache"), "STRAWPOT_REGISTRY_URL": live.url}
        loaded = imported("install", "skill", "code-style", "--skip-tools", cwd=root, env=cache)
    assert (root / ".strawpot" / "skills" / "code-style" / "SKILL.md").is_file()
    assert "resolver.incompatibility" in loaded and "hub_client" in loaded  # it did resolve, from the registry
    assert sorted(m for m in loaded if m.startswith(COLD_INSTALL_NEVER)) == []
    assert len(loaded) <= COLD_INSTALL_MOST, f"{len(loaded)} modules imported (at most {COLD_INSTALL_MOST})"


# `registry serve` (and each of its workers) listens with what the API needs: the web pages' templates and Markdown
# come on the first page a browser asks for
PAGES_ONLY = ("jinja2", "markdown_it", "registry_server.web.pages", "registry_server.web.templating",
              "registry_server.web.markdown")
REGISTRY_SERVE_MOST = 495  # 452 measured (552 with the pages), plus about a tenth


def test_registry_serve_listens_without_the_pages_and_loads_them_on_the_first_page(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx

    from tests._live_registry import start_registry

    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    with start_registry(tmp_path) as live:
        assert httpx.get(f"{live.url}/api/v1/skills").status_code == 200
        loaded = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", live.log(), re.MULTILINE))
        assert "registry_server.server" in loaded and "uvicorn" in loaded, "the import profile was not read"
        assert sorted(m for m in loaded if m.startswith(PAGES_ONLY)) == []
        assert len(loaded) <= REGISTRY_SERVE_MOST, f"{len(loaded)} modules imported (at most {REGISTRY_SERVE_MOST})"
        page = httpx.get(f"{live.url}/", headers={"Accept": "text/html"})
        assert page.status_code == 200 and "<html" in page.text and "jinja2" in live.log()
