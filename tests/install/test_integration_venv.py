"""An integration's install command runs under the trust rules in a virtual environment of its own, made in its
package folder (`.venv`): `pip` there is the environment's, and verification leaves `.venv` alone."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests._cli import strawpot

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "integrations" / "fixture-bot"
SHOW_PIP = "pip install -r requirements.txt && pip --version > pip.txt && python -c 'import sys; print(sys.prefix)' >> pip.txt"


def a_project(tmp_path: Path, *, install: str | None = None) -> Path:
    """A project requiring a copy of fixture-bot by path, its install command trusted in strawpot.toml."""
    package = tmp_path / "fixture-bot"
    shutil.copytree(FIXTURE, package)
    if install is not None:
        main = package / "INTEGRATION.md"
        main.write_text(main.read_text().replace("linux: pip install -r requirements.txt", f"linux: {install}"))
    project = tmp_path / "proj"
    project.mkdir()
    (project / "strawpot.toml").write_text(f'[integrations]\nfixture-bot = {{ path = "{package}" }}\n')
    return project


def test_the_install_command_runs_with_the_integrations_own_pip(tmp_path: Path) -> None:
    project = a_project(tmp_path, install=SHOW_PIP)
    untrusted = strawpot("install", cwd=project, timeout=180)
    assert untrusted.returncode == 0, untrusted.stderr
    folder = project / ".strawpot" / "integrations" / "fixture-bot"
    assert not (folder / ".venv").exists()  # not trusted yet: nothing ran, no environment made
    done = strawpot("trust", "integration:fixture-bot", cwd=project, timeout=300)
    assert done.returncode == 0, done.stderr
    shown = (folder / "pip.txt").read_text().splitlines()
    staged = folder.parent  # it ran in the staged folder beside the package's, then was swapped in
    assert shown[0].startswith("pip ") and f"{staged}/.tmp-fixture-bot-" in shown[0] and "/.venv/lib/" in shown[0]
    assert shown[1].startswith(f"{staged}/.tmp-fixture-bot-") and shown[1].endswith("/.venv")
    # swapped in, its scripts name where it now is (pip's first line names its interpreter by its full path)
    pip = (folder / ".venv" / "bin" / "pip").read_text()
    assert f"{folder}/.venv/bin/python" in pip and ".tmp-" not in pip
    assert f"{folder}/.venv/" in strawpot(folder / ".venv" / "bin" / "pip", "--version", cwd=tmp_path,
                                          program=[]).stdout

    assert strawpot("verify", cwd=project).returncode == 0
    cache = folder / ".venv" / "lib" / "__pycache__"
    cache.mkdir()
    (cache / "x.pyc").write_bytes(b"what running Python leaves")  # the environment changes as it is used
    verified = strawpot("verify", cwd=project)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    again = strawpot("install", cwd=project)
    assert again.returncode == 0 and "Already up to date" in again.stderr, again.stderr
    (folder / "planted.py").write_text("print('not from the package')\n")  # outside .venv: still verified
    tampered = strawpot("verify", cwd=project)
    assert tampered.returncode != 0 and "planted.py: file not in the lock nor the install record" in tampered.stdout \
        + tampered.stderr


def test_a_package_shipping_a_venv_folder_is_refused_in_one_line(tmp_path: Path) -> None:
    """Publishing and path sources leave dot-folders out, but a registry is untrusted: files it serves under
    .venv/ would be taken for the environment's interpreter and pip."""
    from strawpot.install.venv import VenvFailed, make_venv

    with pytest.raises(VenvFailed) as info:
        make_venv(tmp_path, "integration chat 1.0.0", {"adapter.py", ".venv/bin/python"})
    assert str(info.value) == ("integration chat 1.0.0 ships .venv/bin/python, inside .venv/, the folder strawpot "
                               "makes its virtual environment in; the package was not installed")
    assert not (tmp_path / ".venv").exists()


@pytest.mark.parametrize("plural", ["agents", "skills"])
def test_only_integrations_leave_their_venv_unverified(plural: str) -> None:
    from strawpot.model.tree_facts import unverified_dirs

    assert unverified_dirs(plural) == frozenset()
    assert unverified_dirs("integrations") == frozenset({".venv"})


def test_a_confined_install_command_uses_the_venv_too(tmp_path: Path) -> None:
    """Under `[scripts] sandbox = "bwrap"` (no network) the environment is made before the script is confined;
    inside, its pip is the one on PATH and the package folder the script may write holds it."""
    project = a_project(tmp_path, install="pip --version > pip.txt && touch $HOME/escaped 2>/dev/null; true")
    manifest = project / "strawpot.toml"
    manifest.write_text(manifest.read_text() + '\n[scripts]\nsandbox = "bwrap"\nnetwork = "off"\n')
    (tmp_path / "home").mkdir()
    done = strawpot("trust", "integration:fixture-bot", cwd=project, timeout=300,
                    extra_env={"HOME": str(tmp_path / "home")})
    assert done.returncode == 0, done.stderr
    folder = project / ".strawpot" / "integrations" / "fixture-bot"
    assert "/.venv/lib/" in (folder / "pip.txt").read_text()
    assert not (tmp_path / "home" / "escaped").exists()  # confined: only the package folder was writable
    assert strawpot("verify", cwd=project).returncode == 0
