"""One setting read without parsing files that cannot spell it (`config_files.setting`) is what the whole settings
layer gives, for every way TOML can set it, in either file or the environment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from strawpot.config_files import load_settings, setting
from strawpot.model.errors import UsageError
from strawpot.model.layout import Project

KEY = "ZmFrZS1rZXk="
# every spelling of `[install] log_key` in TOML: the fast path must not miss one
SPELLINGS = [
    f'[install]\nlog_key = "{KEY}"\n',
    f'install.log_key = "{KEY}"\n',
    f'install = {{ log_key = "{KEY}" }}\n',
    f'[install]\n"log_key" = "{KEY}"\n',
    f"[install]\n'log_key' = '{KEY}'\n",
    f'"install"."log_key" = "{KEY}"\n',
    f'[install]\n"log\\u005Fkey" = "{KEY}"\n',  # an escape: no `log_key` in the bytes
    f'[ install ]\n  log_key   =   "{KEY}"  # pinned\n',
]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    monkeypatch.setenv("STRAWPOT_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("STRAWPOT_INSTALL_LOG_KEY", raising=False)
    (tmp_path / "config").mkdir()
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "strawpot.toml").write_text("[skills]\n")
    return Project(tmp_path / "proj")


@pytest.mark.parametrize("text", SPELLINGS)
@pytest.mark.parametrize("where", ["global", "project"])
def test_every_spelling_in_either_file_is_read(project: Project, tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "config" / "config.toml" if where == "global" else project.manifest_path
    path.write_text(text + "\n[skills]\n" if where == "project" else text)
    expected = load_settings(project).get("install.log_key")
    assert expected == KEY
    assert setting(project, "install.log_key") == expected


def test_the_environment_is_read(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRAWPOT_INSTALL_LOG_KEY", KEY)
    assert setting(project, "install.log_key") == load_settings(project).get("install.log_key") == KEY


def test_files_that_cannot_spell_it_give_the_default(project: Project, tmp_path: Path) -> None:
    (tmp_path / "config" / "config.toml").write_text('[install]\nrequire_signatures = true\n[registry]\nurl = "x"\n')
    project.manifest_path.write_text("[skills]\na = '*'\n[install]\nmin_release_age = \"3d\"\n")
    assert setting(project, "install.log_key") is None
    assert setting(project, "install.log_key") == load_settings(project).get("install.log_key")
    assert setting(project, "install.require_signatures") is True  # a key a file spells is read from it


def test_a_file_that_spells_it_badly_is_refused_as_the_settings_refuse_it(project: Project, tmp_path: Path) -> None:
    (tmp_path / "config" / "config.toml").write_text("[install]\nlog_key = 3\n")
    with pytest.raises(UsageError) as caught:
        load_settings(project)
    with pytest.raises(UsageError) as fast:
        setting(project, "install.log_key")
    assert fast.value.message == caught.value.message


def test_no_toml_parser_is_imported_when_no_file_can_set_it(project: Project, tmp_path: Path) -> None:
    project.manifest_path.write_text("[skills]\na = '*'\n")
    code = ("import sys; from pathlib import Path; from strawpot.config_files import setting; "
            "from strawpot.model.layout import Project; "
            f"value = setting(Project(Path({str(project.dir)!r})), 'install.log_key'); "
            "print(value, 'tomllib' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={"STRAWPOT_CONFIG_DIR": str(tmp_path / "config"), "PATH": "/usr/bin:/bin"})
    assert done.stdout.split() == ["None", "False"]
