"""The global config file (read and written) and the settings layer read from it, the project file and the environment."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strawpot.model import own_secrets
from strawpot.model.errors import UsageError
from strawpot.model.folders import cache_dir as cache_dir
from strawpot.model.folders import config_path as config_path  # re-exported from folders
from strawpot.model.fs import OWN_FILE_HINT, atomic_write, read_own_file
from strawpot.model.layout import Project as Project  # re-exported: commands find the layout here

if TYPE_CHECKING:
    from strawpot.model.child_env import EnvPolicy
    from strawpot.model.settings import Settings, Source


def load_config() -> dict[str, Any]:
    """The global config file as data, its settings checked by the settings layer and `[tokens]` by shape."""
    from strawpot.model.settings import layered

    source = _file_source(config_path(), "global")
    if source is None:
        return {}
    layered([source])  # a setting of the wrong type, or `[tokens]` of the wrong shape, is one line naming the file
    return dict(source.data)


def save_config(config: dict[str, Any]) -> None:
    import tomlkit

    atomic_write(config_path(), tomlkit.dumps(config), mode=0o600)


def save_config_value(keys: Sequence[str], value: str) -> Path:
    """Set one value of the global config (e.g. agents.NAME.env.VAR) keeping its comments and order; 0600, atomic."""
    from strawpot.model.config_edit import set_value

    path = config_path()
    set_value(path, ".".join(keys), value, is_global=True)
    return path


def load_settings(
    project: Project | None = None,
    flags: Mapping[str, tuple[str, Any]] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Every setting with its origin: defaults < global config < project strawpot.toml < STRAWPOT_* < flags;
    and the registry tokens (STRAWPOT_TOKEN, STRAWPOT_TOKEN_REGISTRY, the global config's `[tokens]`).

    `flags` maps dotted keys to (the flag as typed, its value); a value of None was not given.
    """
    from strawpot.model.settings import SCHEMA, Source, layered
    from valueclass import replace

    environ = own_secrets.environ() if environ is None else environ
    sources = [source for path, layer in ((config_path(), "global"),
                                          (project.manifest_path if project else None, "project"))
               if path is not None and (source := _file_source(path, layer)) is not None]
    env = {name: environ[var] for name, key in SCHEMA.items() if (var := key.env_var) and environ.get(var, "").strip()}
    sources.append(Source("env", "", env))
    sources += [Source("flag", flag, {name: value}) for name, (flag, value) in (flags or {}).items() if value is not None]
    settings = layered(sources)
    settings.tokens = replace(settings.tokens, env=environ.get("STRAWPOT_TOKEN") or None,
                              env_scope=(environ.get("STRAWPOT_TOKEN_REGISTRY") or "").rstrip("/") or None)
    return settings


def setting(project: Project | None, name: str) -> Any:
    """`load_settings(project).get(name)`, without parsing a file (nor importing a TOML parser) when no layer can
    set `name`: in TOML a key is spelled out in the file, or written with an escape (a backslash), so a file with
    neither sets it nowhere. Then a damaged file that does not set it is not reported here, as a command that reads
    no setting would not report it either."""
    from strawpot.model.settings import SCHEMA

    key, spelled = SCHEMA[name], name.rpartition(".")[2].encode()
    for path in (config_path(), project.manifest_path if project else None):
        try:
            raw = read_own_file(path) if path is not None else b""
        except FileNotFoundError:
            continue
        except OSError:
            raw = b"\\"  # unreadable: load_settings says why
        if spelled in raw or b"\\" in raw:
            return load_settings(project).get(name)
    if key.env_var and own_secrets.environ().get(key.env_var, "").strip():
        return load_settings(project).get(name)
    return key.default


def _file_source(path: Path, layer: str) -> Source | None:
    from strawpot.model.settings import Source, key_lines
    from strawpot.model.toml_text import not_utf8, parse_toml

    try:
        raw = read_own_file(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it: {exc.strerror or exc}", hint=OWN_FILE_HINT) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(not_utf8(path, exc)) from None
    return Source(layer, str(path), parse_toml(text, path, hint="fix the file"), key_lines(text))


def env_policy(settings: Settings) -> EnvPolicy:
    """What package-provided code inherits: `[session] pass_env` and `hide_env`, and the tokens it never sees
    (from the settings the command built once, its project's and its flags included)."""
    from strawpot.model.child_env import EnvPolicy, secret_values

    return EnvPolicy(tuple(settings.get("session.pass_env")), tuple(settings.get("session.hide_env")),
                     secret_values(own_secrets.environ(), settings.tokens.stored.values()))


def ask_wait(settings: Settings) -> float | None:
    """Seconds a question of a run without a terminal waits in the run folder (`[session] ask = "run"`), else None."""
    return float(settings.get("session.ask_timeout")) if settings.get("session.ask") == "run" else None
