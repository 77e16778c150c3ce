"""`strawpot start` and `resume` build their settings once, with their flags, and hand them down (each read them
twice before).

A `sitecustomize` on PYTHONPATH adds an audit hook to the real `strawpot` process that counts how often the
global config file is opened: every read of the settings layer opens it once, and nothing else in `start` does.
"""

from __future__ import annotations

from pathlib import Path

from tests._cli import strawpot
from tests.orchestrator._agents import resumable_agent
from tests.orchestrator.conftest import ProjectFixture, standard_roles, standard_skills

COUNTER = '''
import atexit, os, sys

_target, _counted = os.environ["COUNT_OPENS_OF"], [0]


def _hook(event, args):
    if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
        if os.fsdecode(args[0]) == _target:
            _counted[0] += 1


sys.addaudithook(_hook)


@atexit.register
def _report():
    if sys.argv[1:2] in (["start"], ["resume"]):
        with open(os.path.join(os.environ["COUNT_OPENS_TO"], f"{sys.argv[1]}-{os.getpid()}"), "w") as out:
            out.write(str(_counted[0]))
'''


def _counted(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A folder the counts go to, and the environment that counts the opens of a global config file."""
    hooks, counts, config = tmp_path / "hooks", tmp_path / "counts", tmp_path / "config"
    for folder in (hooks, counts, config):
        folder.mkdir()
    (hooks / "sitecustomize.py").write_text(COUNTER)
    (config / "config.toml").write_text('[session]\npass_env = ["GREETING"]\n')
    return counts, {"PYTHONPATH": str(hooks), "COUNT_OPENS_OF": str(config / "config.toml"),
                    "COUNT_OPENS_TO": str(counts), "STRAWPOT_CONFIG_DIR": str(config), "GREETING": "hello"}


def _project(tmp_path: Path) -> ProjectFixture:
    root = tmp_path / "proj"
    root.mkdir()
    return ProjectFixture(root, standard_roles(), standard_skills(),
                          policy={"max_depth": 3, "agent_timeout": 20, "kill_grace": 0.5})


def test_start_reads_the_settings_once(tmp_path: Path) -> None:
    project = _project(tmp_path).build()
    counts, env = _counted(tmp_path)
    result = strawpot("start", "--headless", "--task", "env:GREETING", "--isolation", "none", cwd=project.root,
                      extra_env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["hello"]  # the settings handed down carry [session] pass_env
    assert [(report.name.split("-")[0], report.read_text()) for report in counts.iterdir()] == [("start", "1")]


def test_resume_reads_the_settings_once(tmp_path: Path) -> None:
    project = _project(tmp_path).build(resumable_agent(tmp_path))
    counts, env = _counted(tmp_path)
    first = strawpot("start", "--headless", "--task", "session then pause", cwd=project.root, extra_env=env)
    assert first.returncode == 0, first.stderr
    [run] = (project.root / ".strawpot" / "sessions").iterdir()
    again = strawpot("resume", run.name, "--headless", "--task", "echo:carried on", cwd=project.root, extra_env=env)
    assert again.returncode == 0, again.stderr
    assert sorted((report.name.split("-")[0], report.read_text()) for report in counts.iterdir()) == [
        ("resume", "1"), ("start", "1")]
