"""strawpot/model/folders.py is the one place that says where strawpot's folders are."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from strawpot.model import folders
from strawpot.model.layout import Project

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("strawpot", "hub_client", "resolver", "orchestrator", "registry_server", "dashboard", "sandbox", "valueclass")
# What only the folders module may name: the variables that move a folder, the platform's folders, the tree's name.
OWNED = {"STRAWPOT_CONFIG_DIR", "STRAWPOT_DATA_DIR", "STRAWPOT_CACHE_DIR", "STRAWPOT_HOME", "XDG_CONFIG_HOME",
         "XDG_DATA_HOME", "XDG_CACHE_HOME", ".strawpot", "~/.strawpot"}


def folder_deciders(root: Path) -> list[str]:
    """`file:line: what` for every module but folders.py that imports platformdirs or names an OWNED string."""
    found = []
    for top in PACKAGES:
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if ".venv" in path.parts or rel == "strawpot/model/folders.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = [node.module or ""]
                if any(name.split(".")[0] == "platformdirs" for name in names):
                    found.append(f"{rel}:{node.lineno}: imports platformdirs")
                if isinstance(node, ast.Constant) and node.value in OWNED:
                    found.append(f"{rel}:{node.lineno}: {node.value}")
    return sorted(found, key=lambda line: (line.split(":")[0], int(line.split(":")[1])))


def test_no_other_module_decides_where_a_folder_is() -> None:
    assert folder_deciders(ROOT) == []


def test_the_check_sees_each_way_of_deciding(tmp_path: Path) -> None:
    (tmp_path / "orchestrator").mkdir()
    (tmp_path / "orchestrator" / "x.py").write_text(
        'import os\nfrom platformdirs import user_data_dir\nos.environ.get("STRAWPOT_DATA_DIR")\n'
        'def f():\n    import platformdirs\n    return Path.home() / ".strawpot"\n')
    assert folder_deciders(tmp_path) == [
        "orchestrator/x.py:2: imports platformdirs", "orchestrator/x.py:3: STRAWPOT_DATA_DIR",
        "orchestrator/x.py:5: imports platformdirs", "orchestrator/x.py:6: .strawpot"]


@pytest.mark.parametrize(("var", "folder"), [
    ("STRAWPOT_CONFIG_DIR", folders.config_dir), ("STRAWPOT_DATA_DIR", folders.data_dir),
    ("STRAWPOT_CACHE_DIR", folders.cache_dir), ("STRAWPOT_HOME", folders.home_dir),
])
def test_each_variable_moves_its_folder(var: str, folder: object, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    assert callable(folder)
    monkeypatch.setenv(var, str(tmp_path / "moved"))
    assert folder() == tmp_path / "moved"
    monkeypatch.delenv(var)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    unset = folder()
    assert unset != tmp_path / "moved" and unset.is_relative_to(tmp_path) and "strawpot" in unset.name


def test_the_settings_the_scheduler_and_the_trees_ask_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.projects import ProjectStore
    from strawpot.config_files import cache_dir, config_path

    for var in ("STRAWPOT_CONFIG_DIR", "STRAWPOT_DATA_DIR", "STRAWPOT_CACHE_DIR", "STRAWPOT_HOME"):
        monkeypatch.setenv(var, str(tmp_path / var))
    assert config_path() == tmp_path / "STRAWPOT_CONFIG_DIR" / "config.toml"
    assert cache_dir() == tmp_path / "STRAWPOT_CACHE_DIR"
    assert ProjectStore().data_dir == tmp_path / "STRAWPOT_DATA_DIR"
    assert Project.at(is_global=True).tree_root == tmp_path / "STRAWPOT_HOME"
    assert Project.at(tmp_path).tree_root == tmp_path.resolve() / ".strawpot"


def test_the_secret_config_folders_hold_the_one_in_use_and_the_platforms(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRAWPOT_CONFIG_DIR", str(tmp_path / "moved"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    found = folders.secret_config_dirs()
    assert found[0] == tmp_path / "moved" and tmp_path / "xdg" / "strawpot" in found
    assert len(found) == len(set(found))


@pytest.mark.parametrize("xdg", [None, "", "  ", "/abs/x", "/abs/x/", "rel", "/"])
@pytest.mark.parametrize("home", [None, "/home/u", "/home/u/", "/", "rel"])
def test_the_folders_decided_without_platformdirs_are_its_own(xdg: str | None, home: str | None,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """On Linux the cache and config folders are decided without importing platformdirs where every platformdirs 4
    agrees; each is the one platformdirs gives for the same environment (the rest it decides itself)."""
    import platformdirs

    for owned in ("STRAWPOT_CACHE_DIR", "STRAWPOT_CONFIG_DIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "HOME"):
        monkeypatch.delenv(owned, raising=False)
    if home is not None:
        monkeypatch.setenv("HOME", home)
    decided = 0
    for variable, under_home, ours, theirs in (("XDG_CACHE_HOME", ".cache", folders.cache_dir, platformdirs.user_cache_dir),
                                               ("XDG_CONFIG_HOME", ".config", folders.config_dir,
                                                platformdirs.user_config_dir)):
        if xdg is not None:
            monkeypatch.setenv(variable, xdg)
        if folders._xdg(variable, under_home) is not None:
            decided += 1
            assert ours() == Path(theirs(folders.APP)), (variable, xdg, home)
    if xdg is not None and xdg.startswith("/") or (not (xdg or "").strip() and (home or "").startswith("/")):
        assert decided == 2  # the common cases are decided here: an absolute XDG folder, or none and a real HOME
