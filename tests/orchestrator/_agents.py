"""Test agents made from the stub agent: typed params, a required env var, an install script, a `setup` that reads."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.orchestrator.conftest import STUB_AGENT

TYPED_PARAMS = """\
      turns:
        type: integer
        default: 3
      careful:
        type: boolean
        default: false
"""
ENV = """\
    env:
      STUB_TOKEN:
        required: true
        description: Token the stub agent pretends to need
"""
INSTALL = """\
    install:
      linux: ./build.sh
      macos: ./build.sh
"""


def typed_agent(tmp_path: Path, *, setup_exit: int = 0, install_script: bool = False) -> Path:
    """The stub agent with typed params, a required env var, and a `setup` that reads a line from the terminal."""
    target = tmp_path / "typed-agent"
    shutil.copytree(STUB_AGENT, target, ignore=shutil.ignore_patterns("__pycache__"))
    md = target / "AGENT.md"
    front, _, body = md.read_text().removeprefix("---\n").partition("---\n")
    front = front.replace("    params:\n", "    params:\n" + TYPED_PARAMS) + ENV + (INSTALL if install_script else "")
    md.write_text("---\n" + front + "---\n" + body)
    wrapper = target / "bin" / "stub-wrapper"
    wrapper.write_text(wrapper.read_text().replace(
        '        print("stub-agent needs no setup")\n        return 0',
        f'        print("logged in as " + input("login: "))\n        return {setup_exit}'))
    return target


def resumable_agent(tmp_path: Path) -> Path:
    """The stub agent declaring `metadata.strawpot.session: {resume: true}`."""
    target = tmp_path / "resumable-agent"
    shutil.copytree(STUB_AGENT, target, ignore=shutil.ignore_patterns("__pycache__"))
    md = target / "AGENT.md"
    front, _, body = md.read_text().removeprefix("---\n").partition("---\n")
    md.write_text("---\n" + front.replace("  strawpot:\n", "  strawpot:\n    session:\n      resume: true\n", 1)
                  + "---\n" + body)
    return target
