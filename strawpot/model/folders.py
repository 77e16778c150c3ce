"""Where every strawpot folder is: the global config, the data, the cache, the home (global scope), a project's tree.

The one module that reads STRAWPOT_CONFIG_DIR, STRAWPOT_DATA_DIR, STRAWPOT_CACHE_DIR and STRAWPOT_HOME and asks
platformdirs (tests/model/test_folders.py holds that). Import-light: platformdirs loads only when a folder
is not set by its variable.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP = "strawpot"
TREE_DIR = ".strawpot"  # a project's installed tree and state; also the default home's name under ~
CONFIG_FILE = "config.toml"


def config_dir() -> Path:
    """The global config folder (config.toml with registry tokens and secrets): $STRAWPOT_CONFIG_DIR or
    the platform's (`$XDG_CONFIG_HOME/strawpot`, `~/.config/strawpot` on Linux)."""
    env = os.environ.get("STRAWPOT_CONFIG_DIR")
    if env:
        return Path(env)
    if (plain := _xdg("XDG_CONFIG_HOME", ".config")) is not None:
        return plain
    from platformdirs import user_config_dir

    return Path(user_config_dir(APP))


def config_env(folder: Path) -> dict[str, str]:
    """The environment that makes a strawpot process read its global config from `folder` (a run's own)."""
    return {"STRAWPOT_CONFIG_DIR": str(folder)}


def config_path() -> Path:
    """The global config file."""
    return config_dir() / CONFIG_FILE


def config_path_seen() -> tuple[str, str]:
    """The global config file and what decided it (the variables it depends on), for a cache to keep."""
    return str(config_path()), _config_inputs()


def config_path_cheap(seen: tuple[str, str] | None) -> Path:
    """The global config file without importing platformdirs when `seen` (an earlier `config_path_seen()`) was
    decided by the same variables: for the no-op install check, which must stay cheap."""
    if seen is not None and seen[1] == _config_inputs():
        return Path(seen[0])
    return config_path()


def _config_inputs() -> str:
    return f"{os.environ.get('STRAWPOT_CONFIG_DIR', '')}\0{os.environ.get('XDG_CONFIG_HOME', '')}\0{Path.home()}"


def data_dir() -> Path:
    """The data folder (schedules, their history, the projects the dashboard knows): $STRAWPOT_DATA_DIR or the
    platform's."""
    env = os.environ.get("STRAWPOT_DATA_DIR")
    if env:
        return Path(env)
    from platformdirs import user_data_dir

    return Path(user_data_dir(APP))


def cache_dir() -> Path:
    """The download cache: $STRAWPOT_CACHE_DIR or the platform's."""
    env = os.environ.get("STRAWPOT_CACHE_DIR")
    if env:
        return Path(env)
    if (plain := _xdg("XDG_CACHE_HOME", ".cache")) is not None:
        return plain
    from platformdirs import user_cache_dir

    return Path(user_cache_dir(APP))


def _xdg(variable: str, under_home: str) -> Path | None:
    """platformdirs' answer on Linux where every platformdirs 4 gives the same one, without importing it (a read-only
    command's start-up would be a sixth platformdirs): an absolute `variable`, else `under_home` in an absolute
    $HOME when `variable` is unset or empty. None for anything else (platformdirs decides); tests/model/test_folders.py
    holds the two equal."""
    if sys.platform != "linux":
        return None
    given = os.environ.get(variable, "")
    if given.startswith("/"):
        return Path(given) / APP
    home = os.environ.get("HOME", "")
    if given.strip() or not home.startswith("/"):
        return None
    return Path(home.rstrip("/") or "/") / under_home / APP


def home_dir() -> Path:
    """The global scope's tree (and its memory): $STRAWPOT_HOME or ~/.strawpot."""
    env = os.environ.get("STRAWPOT_HOME")
    return Path(env) if env else Path.home() / TREE_DIR


def project_tree(project_dir: Path) -> Path:
    """A project's installed tree and state: `<project>/.strawpot`."""
    return project_dir / TREE_DIR


def secret_config_dirs() -> list[Path]:
    """The config folders a confined process must not see (they hold registry tokens): the one in use and the
    platform's, when $STRAWPOT_CONFIG_DIR moved it elsewhere; each once."""
    from platformdirs import user_config_dir

    found = [config_dir()]
    for extra in (Path(user_config_dir(APP)),
                  *([Path(xdg) / APP] if (xdg := os.environ.get("XDG_CONFIG_HOME")) else [])):
        if extra not in found:
            found.append(extra)
    return found
