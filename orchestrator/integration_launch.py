"""How one installed integration is started: its package folder, its entry point, its environment and its files.

An integration is looked up by name in the installed trees given (the UI's project first, then the global scope).
It runs `metadata.strawpot.entry_point` in its package folder, with its virtual environment first on PATH, and
the user's environment, its `[integrations.<name>.env]`, and `STRAWPOT_API_URL` (its capability URL),
`STRAWPOT_INTEGRATION_NAME`, `STRAWPOT_DATA_DIR` (its data folder, outside the verified tree) and, for one installed in
the UI's project, `STRAWPOT_PROJECT_ID` (that project's conversation id). Everything that
stops it from starting is one line (NotStartable) saying what and how to fix it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.conversations import ConversationStore
from orchestrator.integration_keys import api_url, integrations_dir, key_for
from strawpot.model.kinds import Kind
from strawpot.model.layout import Project
from strawpot.model.tree_facts import venv_bin

LOG_FILE = "adapter.log"
_NOT_PASSED = ("STRAWPOT_TOKEN", "STRAWPOT_TOKEN_REGISTRY", "PYTHONHOME", "BASH_ENV")  # a registry token is no bot's


class NotStartable(Exception):
    """Why an integration cannot start, in one line (what, where, what to do)."""


@dataclass(frozen=True)
class Launch:
    """What starting one integration takes."""

    name: str
    folder: Path  # its package folder (the cwd)
    argv: tuple[str, ...]
    env: dict[str, str]
    data: Path  # {data}/integrations/<name>/data
    log: Path  # {data}/integrations/<name>/adapter.log


def own_dir(data: Path, name: str) -> Path:
    """`{data}/integrations/<name>`: its log and its data folder, 0700."""
    folder = integrations_dir(data) / name
    folder.mkdir(exist_ok=True, mode=0o700)
    return folder


def log_path(data: Path, name: str) -> Path:
    return integrations_dir(data) / name / LOG_FILE


def installed_folder(name: str, trees: Sequence[Path]) -> Path | None:
    """The package folder of integration `name` in the first tree that has it."""
    for tree in trees:
        folder = tree / Kind.INTEGRATION.plural / name
        if (folder / Kind.INTEGRATION.main_file).is_file():
            return folder
    return None


def installed_names(trees: Sequence[Path]) -> dict[str, Path]:
    """Every installed integration, by name, with the folder it is taken from (the first tree wins)."""
    found: dict[str, Path] = {}
    for tree in trees:
        kind_dir = tree / Kind.INTEGRATION.plural
        names = sorted(os.listdir(kind_dir)) if kind_dir.is_dir() else []
        for name in names:
            if not name.startswith(".") and (kind_dir / name / Kind.INTEGRATION.main_file).is_file():
                found.setdefault(name, kind_dir / name)
    return found


def prepare(name: str, trees: Sequence[Path], data: Path, origin: str, configured: Mapping[str, str],
            environ: Mapping[str, str], *, project: Path | None = None) -> Launch:
    """The Launch of integration `name`; NotStartable when it is not installed, not valid, not built here, or
    misses a required variable. One installed in `project`'s tree is that project's: it is given the project's
    conversation id as `STRAWPOT_PROJECT_ID` (its conversations are that project's, as the real adapters expect)."""
    from strawpot.model.install_record import RecordUnreadable, load_record
    from strawpot.model.package import PackageInvalid, parse_package

    folder = installed_folder(name, trees)
    if folder is None:
        where = " or ".join(str(tree) for tree in trees)
        raise NotStartable(f"integration {name} is not installed (looked in {where}); "
                           f"install it: `strawpot install integration {name}`")
    main = folder / Kind.INTEGRATION.main_file
    try:
        package = parse_package({main.name: main.read_bytes()}, kind=Kind.INTEGRATION, expected_name=name)
    except OSError as exc:
        raise NotStartable(f"cannot read {main}: {exc.strerror or exc}") from None
    except PackageInvalid as exc:
        raise NotStartable(f"{main}: {exc.issues[0]}; the integration cannot start (report it to its author)") from None
    path = environ.get("PATH", os.defpath)
    if package.install_script() is not None:
        try:
            built = load_record(folder) is not None
        except RecordUnreadable:
            built = False
        if not built or not (venv_bin(folder) / "python").exists():
            raise NotStartable(f"integration {name}'s install command has not run here, so it has no virtual "
                               f"environment; review it (`strawpot info integration {name}`), then run "
                               f"`strawpot trust integration:{name}`")
        path = os.pathsep.join([str(venv_bin(folder)), path])
    env = {k: v for k, v in environ.items() if k not in _NOT_PASSED}
    env.update({spec.name: spec.default for spec in package.env.values()
                if spec.default is not None and spec.name not in env})
    env.update(configured)
    for spec in package.env.values():
        if spec.required and not env.get(spec.name):
            about = f" ({spec.description})" if spec.description else ""
            raise NotStartable(f"integration {name} needs {spec.name}{about}, which is not set; set it with "
                               f"`strawpot config set --global integrations.{name}.env.{spec.name} VALUE`")
    own = own_dir(data, name)
    (own / "data").mkdir(exist_ok=True, mode=0o700)
    env.update(PATH=path, STRAWPOT_API_URL=api_url(origin, key_for(data, name)), STRAWPOT_INTEGRATION_NAME=name,
               STRAWPOT_DATA_DIR=str(own / "data"))
    if project is not None and folder.is_relative_to(Project(project).tree_root):
        env["STRAWPOT_PROJECT_ID"] = str(ConversationStore(data).project_id(project))
    if package.install_script() is not None:
        env["VIRTUAL_ENV"] = str(venv_bin(folder).parent)
    first = package.entry_point[0]
    program = first if "/" in first else shutil.which(first, path=path)  # `./run.sh`: in its folder, the cwd
    if program is None:
        raise NotStartable(f"integration {name}: {package.entry_point[0]!r}, the program of its entry point "
                           f"{' '.join(package.entry_point)!r}, is not on PATH")
    return Launch(name, folder, (program, *package.entry_point[1:]), env, own / "data", own / LOG_FILE)
