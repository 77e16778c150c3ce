"""The no-op answer is the install pipeline's first step: one hash, one set of tree facts, one flag table.

The entry point (`strawpot.cli`) parses a bare `install` before click is imported and asks the same
`nothing_to_do` that `service.run` asks first; these tests hold the three in step with the slow path.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import click
import pytest

from strawpot.commands import _early as early
from strawpot.install import fastcheck
from strawpot.install.fastcheck import first_step, manifest_hash
from strawpot.install.options import Edit, LockMode, Options, Requested
from strawpot.install.service import run
from strawpot.model import tree_facts
from strawpot.model.kinds import Kind
from strawpot.model.manifest import Manifest

ROOT = Path(__file__).resolve().parents[2]
OPTS = Options(registry="http://hub.test")


def _options_of(command: click.Command) -> dict[str, click.Option]:
    """Every spelling of every option of `command` (`--yes` and `-y` alike), with its parameter."""
    return {spelling: p for p in command.params if isinstance(p, click.Option)
            for spelling in [*p.opts, *p.secondary_opts]}


def test_the_install_row_names_what_the_no_op_answer_reads_as_click_does() -> None:
    """Every option of install's row is click's, by the same parameter name; the rest (JSON, a dry run...) are not
    in it, so they send the command line to click. tests/commands/test_early_answer.py holds every row."""
    from strawpot.commands.install import command as install

    flags, values, arguments = early.TABLE["install"]
    options = _options_of(install)
    assert set(flags) | set(values) <= set(options) and arguments == ()
    for spelling in flags:
        assert options[spelling].is_flag and options[spelling].name == flags[spelling], spelling
    for spelling in values:
        assert not options[spelling].is_flag and options[spelling].name == values[spelling], spelling
    noop = {spelling for spelling, name in {**flags, **values}.items() if name in early.NOOP_INSTALL}
    assert {"--json", "--dry-run", "--no-save", "--ignore-scripts"}.isdisjoint(noop)  # they want more than a no-op
    for spelling in set(flags) - noop:
        assert early.bare_install(["install", spelling]) is None, spelling
    assert early.bare_install(["install", "skill", "x"]) is None  # packages to add: never a no-op


def _install_argument_sets(tmp_path: Path) -> list[list[str]]:
    """Every option of click's install command, alone and in pairs (a value option with a sample value)."""
    from strawpot.commands.install import command as install

    samples = {"project": str(tmp_path), "registry": "http://hub.test"}
    each = [[p.opts[0]] if p.is_flag else [p.opts[0], samples[p.name or ""]]
            for p in install.params if isinstance(p, click.Option) and p.name != "help"]
    return [[*a] for a in each] + [[*a, *b] for i, a in enumerate(each) for b in each[i + 1:]]


def test_the_early_parse_asks_what_the_pipeline_asks_for_every_option_click_knows(tmp_path: Path) -> None:
    """Click parses each argument set: the entry point takes a set only when the options click builds admit the
    first step, declines one they admit only for an option in its click-only table, and asks the same question."""
    from strawpot.commands.install import command as install

    for args in _install_argument_sets(tmp_path):
        params = install.make_context("install", list(args)).params
        found = early.bare_install(["install", *args])
        if params["locked"] and params["frozen"]:
            assert found is None  # click refuses the pair
            continue
        lock = LockMode.from_flags(locked=params["locked"], frozen=params["frozen"])
        names = ("registry", "offline", "dry_run", "no_save", "ignore_scripts", "install_tools", "skip_tools",
                 "trust_project")
        options = Options.for_install(lock=lock, **{name: params[name] for name in names})
        admitted = options.only_current() and not params["as_json"]  # JSON wants the whole outcome
        assert found is None or admitted, args  # never answers a run the pipeline would not
        flags, values, _ = early.TABLE["install"]
        read = {**flags, **values}
        unnamed = {a.partition("=")[0] for a in args if a.startswith("-")
                   if read.get(a.partition("=")[0]) not in early.NOOP_INSTALL}
        assert found is not None or not admitted or unnamed, args  # declines only for an option the no-op leaves
        if found is not None:
            assert early.current_question(found) == options.current_question(), args
            assert {name: params[name] for name in found} == found, args  # what click parsed, by click's names


def test_the_env_var_click_reads_for_an_option_sends_the_install_through_click(monkeypatch) -> None:
    from strawpot.commands.install import command as install

    assert {p.envvar for p in install.params if isinstance(p, click.Option) and p.envvar} <= early.CLICK_ONLY_ENV
    monkeypatch.setattr(early, "_noop_install", lambda params: True)
    assert early.answer(["install"]) == 0
    monkeypatch.setenv("STRAWPOT_TRUST_PROJECT", "1")
    assert early.answer(["install"]) is None


def test_the_manifest_the_pipeline_and_the_early_answer_share_one_hash(tmp_path: Path, monkeypatch) -> None:
    assert fastcheck.dependency_hash is tree_facts.dependency_hash
    path = tmp_path / "strawpot.toml"
    path.write_text('[skills]\na = "^1"\n')
    calls: list[Path] = []

    def spy(folder: Path, data: object) -> str:
        calls.append(folder)
        return "sha256:spy"

    monkeypatch.setattr(tree_facts, "dependency_hash", spy)
    assert Manifest.load(path).dependency_hash() == "sha256:spy"  # Manifest calls the shared function
    assert calls == [tmp_path]


def test_the_tree_constants_are_one_definition() -> None:
    from strawpot.install import apply
    from strawpot.model import install_record, installed

    assert (apply.TMP_PREFIX, apply.OLD_PREFIX, apply.DEL_PREFIX) == tree_facts.LEFTOVER_PREFIXES
    assert installed.VERSION_FILE is tree_facts.VERSION_FILE is fastcheck.VERSION_FILE
    assert install_record.RECORD_FORMAT is tree_facts.RECORD_FORMAT is fastcheck.RECORD_FORMAT
    assert fastcheck.INDEX_NAME is tree_facts.INDEX_NAME
    for module in (fastcheck, apply, install_record, installed):  # none assigns its own copy
        tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
        assigned = {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets
                    if isinstance(t, ast.Name)}
        assert not assigned & {"VERSION_FILE", "RECORD_FILE", "RECORD_FORMAT", "INDEX_NAME", "INDEX_FORMAT",
                               "TMP_PREFIX", "OLD_PREFIX", "DEL_PREFIX"}, module.__name__


def _full_plan_has_work(project, hub_client) -> bool:
    """What the rest of the pipeline says, the early step left out (a dry run never takes it)."""
    outcome = run(project, None, Options(registry="http://hub.test", dry_run=True, scripts="ignore"), client=hub_client)
    return outcome.resolved or bool(outcome.changes) or bool(outcome.missing_tools)


def _grow_a_file(project) -> None:
    main = project.tree_root / "skills" / "a" / "SKILL.md"
    main.write_bytes(main.read_bytes() + b"!")


def _extra_file(project) -> None:
    (project.tree_root / "skills" / "a" / "stray.md").write_text("x")


def _edit_version(project) -> None:
    (project.tree_root / "skills" / "a" / ".version").write_text("0.9.0\n")


def _edit_manifest(project) -> None:
    project.manifest_path.write_text(project.manifest_path.read_text() + 'b = "*"\n')


def _remove_lock(project) -> None:
    project.lock_path.unlink()


def _leave_a_temp_folder(project) -> None:
    (project.tree_root / "skills" / f"{tree_facts.TMP_PREFIX}a-dead").mkdir()


@pytest.mark.parametrize("change", [None, _grow_a_file, _extra_file, _edit_version, _edit_manifest, _remove_lock,
                                    _leave_a_temp_folder])
def test_the_early_answer_and_the_full_plan_agree(fakehub, hub_client, project,
                                                  change: Callable[..., None] | None) -> None:
    fakehub.add("skill", "a", "1.0.0")
    fakehub.add("skill", "b", "1.0.0")
    run(project, Edit(add=(Requested(Kind.SKILL, "a"),)), OPTS, client=hub_client)
    if change is not None:
        change(project)
    early = first_step(project, None, OPTS)
    has_work = _full_plan_has_work(project, hub_client)
    if change is _leave_a_temp_folder:  # for `recover` to clear (a dry run does not): the early step defers
        assert early is None
    else:
        assert (early is not None) == (not has_work)
        assert (early == 1) if change is None else has_work


def test_service_run_answers_with_its_first_step_and_asks_the_registry_nothing(fakehub, hub_client, project):
    fakehub.add("skill", "a", "1.0.0")
    run(project, Edit(add=(Requested(Kind.SKILL, "a"),)), OPTS, client=hub_client)
    asked = len(fakehub.requests)
    out = run(project, None, OPTS, client=hub_client)
    assert (out.unchanged, out.changes, out.resolved, len(fakehub.requests)) == (1, [], False, asked)
    assert out.lock is not None and [p.name for p in out.lock.packages] == ["a"]
    lock_only = run(project, None, Options(registry="http://hub.test", tree=OPTS.tree.NONE), client=hub_client)
    assert lock_only.lock is not None and not lock_only.stale and len(fakehub.requests) == asked


@pytest.mark.parametrize("options", [
    Options(dry_run=True), Options(save=False), Options(scripts="ignore"), Options(tools="run"),
    Options(trust_project=True), Options(trust_now=frozenset({"skill:a"})), Options(tree=OPTS.tree.EXACT),
    Options(rebuild=frozenset({(Kind.SKILL, "a")})),
])
def test_runs_asking_for_more_than_a_current_tree_skip_the_early_step(fakehub, hub_client, project, options):
    fakehub.add("skill", "a", "1.0.0")
    run(project, Edit(add=(Requested(Kind.SKILL, "a"),)), OPTS, client=hub_client)
    assert first_step(project, None, OPTS) == 1
    assert first_step(project, None, options) is None
    assert first_step(project, Edit(upgrade_all=True), OPTS) is None
    assert first_step(project, None, Options(lock=LockMode.FROZEN)) == 1


def test_an_unreadable_manifest_is_left_to_the_full_reader(tmp_path: Path) -> None:
    path = tmp_path / "strawpot.toml"
    path.write_text('[skills]\na = { version = 3 }\n')
    assert manifest_hash(path) is None
    path.write_text('[skills]\na = { version = "^1", path = "missing" }\n')
    assert manifest_hash(path) is None
    path.write_bytes(b"\xff[skills]\n")
    assert manifest_hash(path) is None


def _broad_handlers(path: Path) -> list[int]:
    """Lines of `except:`, `except Exception` or `except BaseException` that swallow (no re-raise)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ExceptHandler):
            continue
        names = [node.type] if not isinstance(node.type, ast.Tuple) else list(node.type.elts)
        broad = node.type is None or any(isinstance(n, ast.Name) and n.id in ("Exception", "BaseException")
                                         for n in names)
        if broad and not any(isinstance(stmt, ast.Raise) for stmt in ast.walk(node)):
            found.append(node.lineno)
    return found


def test_the_early_path_catches_only_the_errors_that_mean_ask_the_full_path(tmp_path: Path) -> None:
    for module in ("strawpot/cli.py", "strawpot/install/fastcheck.py", "strawpot/model/tree_facts.py"):
        assert _broad_handlers(ROOT / module) == [], module
    probe = tmp_path / "probe.py"
    probe.write_text("try:\n    pass\nexcept Exception:\n    pass\ntry:\n    pass\nexcept (OSError, Exception):\n"
                     "    pass\ntry:\n    pass\nexcept BaseException:\n    raise\n")
    assert _broad_handlers(probe) == [3, 7]
