"""What a setting is (name, type, default, env var) and how five layers make one value with its origin.

Layers, lowest first: built-in defaults < the global `config.toml` < the project's `strawpot.toml` <
`STRAWPOT_*` environment variables < command-line flags. Every effective value remembers the layer (and
file and line, or variable, or flag) it came from, as `git config --show-origin` does. An unknown key in a
file is a warning naming file and line; a value of the wrong type is a `UsageError` (exit 2) naming the
file or variable and the key. `[agents.<name>]` tables are free-form (an agent's params, typed by the
agent); `[agents.<name>.env]` is read from the global file only, since the project file is committed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

from strawpot.model.errors import UsageError
from strawpot.model.kinds import REQUIREMENT_TABLES, Kind
from valueclass import Record, State, field, replace

TYPE_CHECKING = False  # typing is not imported where one setting is read (`config_files.setting`)
if TYPE_CHECKING:
    from typing import Any

LAYERS = ("default", "global", "project", "env", "flag")
# Tables of the project file that hold requirements, not settings (the manifest reads them).
_PROJECT_ONLY_TABLES = frozenset({"workspace"})  # read by strawpot.model.workspace, not a setting
_GLOBAL_ONLY_TABLES = frozenset({"tokens"})  # `strawpot login` tokens, keyed by registry URL
_AGENT_RESERVED = frozenset({"version", "default_agent", "env", "path"})  # a requirement's own keys, not params
_ENV_KINDS = {"agents": Kind.AGENT, "skills": Kind.SKILL, "integrations": Kind.INTEGRATION}  # tables that may carry `[<kinds>.<name>.env]`
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\*?")  # an environment variable's name, or a prefix and `*`


class Key(Record):
    """One setting: dotted name, value type, default, and its environment variable (if it has one)."""

    name: str
    type: str  # string | integer | number | boolean | list | one of `choices`
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    env: bool = True
    item: re.Pattern[str] | None = None  # what each entry of a list must look like
    item_example: str = ""
    env_name: str = ""  # the variable, where it is not STRAWPOT_<SECTION>_<KEY>

    @property
    def env_var(self) -> str | None:
        if not self.env:
            return None
        return self.env_name or "STRAWPOT_" + self.name.replace(".", "_").upper()


DEFAULT_REGISTRY_URL = "https://strawhub.dev"

SCHEMA: dict[str, Key] = {k.name: k for k in (
    Key("registry.url", "string", DEFAULT_REGISTRY_URL, "the registry packages come from and go to"),
    Key("registry.timeout", "number", 120.0, "seconds one registry request may take in all, retries included",
        minimum=0.001, env_name="STRAWPOT_HTTP_TIMEOUT"),
    Key("registry.deadline", "number", 600.0, "seconds all registry requests of one command may take",
        minimum=0.001),
    Key("registry.public_url", "string", None,
        "the address `strawpot registry serve` names in its pages (never taken from a request's Host header)"),
    Key("registry.allow_ranges", "boolean", False, "whether `strawpot registry serve` takes published dependency "
        "ranges (^1.0, >=1), which StrawHub's grammar (slug, slug==X.Y.Z, *) refuses"),
    Key("registry.upstream", "list", (), "the registries `strawpot registry serve` stands in front of, asked in "
        "order for the names it does not hold (a mirror)", env=False, item=re.compile(r"https?://\S+"),
        item_example='["https://strawhub.dev"]'),
    Key("registry.upstream_ttl", "number", 300.0, "seconds a mirror trusts what it fetched of a package's "
        "versions before it asks upstream again", minimum=0),
    Key("install.min_release_age", "string", None, "how old a version must be before a resolution may choose it "
        "(90s, 30m, 12h, 3d; recorded in strawpot.lock)"),
    Key("install.require_signatures", "boolean", False, "whether install refuses packages without a signed publish "
        "statement"),
    Key("install.log_key", "string", None, "the registry transparency log's public key (base64), pinned instead of "
        "learnt on first use"),
    Key("registry.require_signatures", "boolean", False, "whether `strawpot registry serve` refuses publishes "
        "without a signed statement"),
    Key("orchestrator.role", "string", None, "the role `strawpot start` runs"),
    Key("orchestrator.runtime", "string", None, "the agent that plays a role no other layer binds"),
    Key("policy.max_depth", "integer", 3, "how deep delegations may nest", minimum=0),
    Key("policy.max_delegations", "integer", 100, "delegations a run may make in all", minimum=0),
    Key("policy.agent_timeout", "number", 600.0, "seconds an agent may run", minimum=0.001),
    Key("policy.kill_grace", "number", 3.0, "seconds between SIGTERM and SIGKILL", minimum=0),
    Key("scripts.trusted", "list", (), "packages whose install scripts may run (KIND:SLUG)", env=False,
        item=re.compile(rf"(?:{'|'.join(k.value for k in Kind)}):[a-z0-9][a-z0-9-]*"),
        item_example='["agent:my-agent", "skill:denden"]'),
    Key("scripts.timeout", "number", 300.0, "seconds an install script may run", minimum=1),
    Key("scripts.sandbox", "choice", "none", "what confines install scripts", choices=("none", "bwrap")),
    Key("scripts.network", "choice", "on", "whether a sandboxed install script has a network", choices=("on", "off")),
    Key("denden.transport", "choice", "unix", "how agents reach Denden", choices=("unix", "tcp")),
    Key("session.isolation", "choice", "none", "where a run's agents work", choices=("none", "worktree")),
    Key("session.merge", "choice", "patch", "how a worktree session's work comes back",
        choices=("patch", "branch", "pr")),
    Key("session.remote", "string", "origin", "the git remote `--merge pr` pushes to"),
    Key("session.sandbox", "choice", "none", "what confines a run's agents", choices=("none", "bwrap")),
    Key("session.runner", "choice", "local", "where a whole session runs: this machine, or a Ray cluster "
        "(strawpot[ray])", choices=("local", "ray")),
    Key("runner.ray.address", "string", "auto", "the Ray cluster `[session] runner = \"ray\"` runs sessions on: "
        "auto (the one this machine belongs to) or ray://host:port or host:port"),
    Key("runner.ray.resources", "list", (), "custom Ray resources a remote session asks for (pins it to the "
        "nodes that have them)", item=re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*"), item_example='["gpu_box"]'),
    Key("runner.ray.connect_timeout", "number", 5.0, "seconds to reach the Ray cluster", minimum=0.1),
    Key("runner.max_parallel", "integer", 8, "sessions the scheduler runs at once at most (on any runner); the "
        "fires past it wait for a slot", minimum=1),
    Key("sandbox.network", "choice", "on", "whether sandboxed agents have a network", choices=("on", "off")),
    Key("sandbox.writable", "list", (), "more paths sandboxed agents may write (absolute or ~/...)"),
    Key("sandbox.hidden", "list", (), "more paths no sandboxed process sees (absolute or ~/...)"),
    Key("session.always_stage", "list", ("denden", "strawpot-session-recap"), "skills staged into every "
        "agent's workspace (and put on PATH) whenever they are locked, whatever the role lists",
        item=re.compile(r"[a-z0-9][a-z0-9-]{0,63}"), item_example='["denden", "strawpot-session-recap"]'),
    Key("session.pass_env", "list", (), "more variables agents, wrappers, install scripts and tool hints inherit "
        "(NAME or PREFIX*)", item=_ENV_NAME, item_example='["SSH_AUTH_SOCK", "AWS_*"]'),
    Key("session.hide_env", "list", (), "variables they never get, even when a package declares them "
        "(NAME or PREFIX*)", item=_ENV_NAME, item_example='["OPENAI_API_KEY", "AWS_*"]'),
    Key("session.max_file_size", "number", 50.0, "MB: a larger file a worktree session made stays on its branch",
        minimum=0),
    Key("session.git_timeout", "number", 120.0, "seconds one git call of a worktree session may take",
        minimum=0.001),
    Key("session.ask", "choice", "default", "how askUser is answered in a run without a terminal: default (the "
        "question's default or first choice, at once) or run (it waits in the run folder for `strawpot ui`)",
        choices=("default", "run")),
    Key("session.ask_timeout", "number", 600.0, "seconds a question waits in the run folder before the default "
        "answers it", minimum=0),
    Key("ui.integrations", "list", (), "integrations `strawpot ui` starts and supervises (global config or env only)",
        item=re.compile(r"[a-z0-9][a-z0-9-]{0,63}"), item_example='["telegram", "slack"]'),
    Key("memory.provider", "string", "builtin", "the memory provider: builtin, or an entry point of strawpot.memory"),
    Key("memory.max_prompt_bytes", "integer", 16 * 1024, "bytes of memory prompt an agent is given at most",
        minimum=1024),
    Key("schedule.catch_up", "choice", "none", "what the scheduler does with fire times that passed while none ran",
        choices=("none", "latest")),
    Key("conversations.home", "string", None, "the project a chat adapter's global conversations run in (default: "
        "the one `strawpot ui` serves)"),
)}


SETTINGS_TABLES = frozenset(name.partition(".")[0] for name in SCHEMA)  # [registry], [policy], [memory], ...


class Origin(Record):
    """Where a value came from: its layer and, for files, `path:line`; for env, the variable; for flags, the flag."""

    layer: str
    where: str = ""

    def __str__(self) -> str:
        return {"default": "default", "global": f"global config {self.where}", "project": f"project {self.where}",
                "env": f"env {self.where}", "flag": f"flag {self.where}"}[self.layer]


class Value(Record):
    """One effective setting: its key, value and the layer it came from."""
    key: str
    value: Any
    origin: Origin


class Source(Record):
    """One layer's raw settings: a file's parsed TOML (with its key lines), the environment, or flags."""

    layer: str
    where: str  # a path for files
    data: Mapping[str, Any]
    lines: Mapping[str, int] = field(default_factory=dict)


class Tokens(Record):
    """Registry tokens: STRAWPOT_TOKEN (`env`) and the one registry STRAWPOT_TOKEN_REGISTRY limits it to
    (`env_scope`), and those `strawpot login` stored in the global config's `[tokens]`, by registry URL."""

    env: str | None = None
    env_scope: str | None = None
    stored: Mapping[str, str] = field(default_factory=dict)


class Settings(State):
    """The effective settings: a value and an origin for every key of SCHEMA, plus agents' tables and tokens."""

    _fields = ("values", "agents", "env_tables", "warnings", "overruled", "layers", "tokens")

    def __init__(self, values: dict[str, Value]) -> None:
        self.values = values
        self.agents: dict[str, dict[str, Value]] = {}
        self.env_tables: dict[tuple[Kind, str], dict[str, Value]] = {}
        self.warnings: list[str] = []
        self.overruled: list[str] = []  # project values that would have lowered the sandbox
        self.layers: dict[tuple[str, str], Value] = {}  # (key, layer) -> what that layer said
        self.tokens = Tokens()

    def get(self, key: str) -> Any:
        return self.values[key].value

    def origin(self, key: str) -> Origin:
        return self.values[key].origin

    def in_layer(self, key: str, layer: str) -> Value | None:
        """What one layer (`default`, `global`, `project`, `env`, `flag`) set `key` to, or None if it did not."""
        return self.layers.get((key, layer))

    def _set(self, value: Value) -> None:
        self.values[value.key] = value
        self.layers[(value.key, value.origin.layer)] = value

    def agent(self, name: str) -> dict[str, Any]:
        """`[agents.<name>]` params, project over global (an agent's own defaults are not included)."""
        return {k: v.value for k, v in self.agents.get(name, {}).items()}

    def env_for(self, kind: Kind, name: str) -> dict[str, str]:
        """`[agents|skills|integrations.<name>.env]` from the global config."""
        return {k: str(v.value) for k, v in self.env_tables.get((kind, name), {}).items()}

    def saved_env(self) -> dict[tuple[Kind, str], dict[str, str]]:
        """Every `[<kinds>.<name>.env]` table of the global config."""
        return {key: self.env_for(*key) for key in self.env_tables}


def layered(sources: Iterable[Source]) -> Settings:
    """Fold the layers, lowest first, into effective values; raises UsageError on a wrong type."""
    settings = Settings({})
    for name, key in SCHEMA.items():
        settings._set(Value(name, key.default, Origin("default")))
    for source in sources:
        if source.layer in ("global", "project"):
            _fold_file(settings, source)
        else:
            _fold_flat(settings, source)
    _keep_floors(settings)
    settings.warnings.extend(settings.overruled)
    return settings


# What a project file may raise but never lower below the user's own layers (the global config; the environment
# and flags are above the project anyway): a cloned repository, or an agent that edited strawpot.toml, must not
# unconfine the next run. Each key's values, weakest first.
NEVER_LOWERED = {"session.sandbox": ("none", "bwrap"), "scripts.sandbox": ("none", "bwrap"),
                 "sandbox.network": ("on", "off"), "scripts.network": ("on", "off")}
_USER_LAYERS = ("global", "env", "flag")


def _keep_floors(settings: Settings) -> None:
    """A project value weaker than the global config's gives way to it; the project's `[sandbox] hidden` adds to
    the global list; its `[sandbox] writable` is ignored when the user's own layers ask for the sandbox."""
    for key, order in NEVER_LOWERED.items():
        mine, floor = settings.values[key], settings.in_layer(key, "global")
        if mine.origin.layer == "project" and floor is not None and order.index(floor.value) > order.index(mine.value):
            settings.values[key] = floor
            settings.overruled.append(f"{mine.origin.where}: {key} = {mine.value!r} is ignored: a project file cannot "
                                     f"lower the {floor.value!r} of the global config ({floor.origin.where})")
    hidden, floor = settings.values["sandbox.hidden"], settings.in_layer("sandbox.hidden", "global")
    if hidden.origin.layer == "project" and floor is not None:
        settings.values["sandbox.hidden"] = replace(hidden, value=(*floor.value, *(
            p for p in hidden.value if p not in floor.value)))
    writable = settings.values["sandbox.writable"]
    asked = any((v := settings.in_layer("session.sandbox", layer)) is not None and v.value != "none"
                for layer in _USER_LAYERS)
    if writable.origin.layer == "project" and writable.value and asked:
        settings.values["sandbox.writable"] = settings.in_layer("sandbox.writable", "global") or settings.in_layer(
            "sandbox.writable", "default") or writable
        settings.overruled.append(f"{writable.origin.where}: sandbox.writable is ignored: a project file cannot "
                                 "widen the sandbox your own config, environment or flags ask for")


def _fold_file(settings: Settings, source: Source) -> None:
    for table, content in source.data.items():
        if table in _ENV_KINDS:
            _fold_package_tables(settings, source, _ENV_KINDS[table], content)
        elif table == "tokens" and source.layer == "global":
            settings.tokens = replace(settings.tokens, stored=_stored_tokens(source, content))
        elif (table in REQUIREMENT_TABLES | _PROJECT_ONLY_TABLES and source.layer == "project"
              or table in _GLOBAL_ONLY_TABLES and source.layer == "global"):
            continue
        elif not isinstance(content, dict):
            if any(name.startswith(f"{table}.") for name in SCHEMA):
                raise UsageError(f"{_at(source, table)}: [{table}] must be a table", hint="fix or remove it")
            settings.warnings.append(_unknown(source, table, f"unknown setting '{table}'"))
        else:
            for name, raw in _nested(table, content):
                dotted = f"{table}.{name}"
                key = SCHEMA.get(dotted)
                if key is None:
                    settings.warnings.append(_unknown(source, dotted, f"unknown setting '{dotted}'" + _close(dotted)))
                    continue
                where = _at(source, dotted)
                value = check(key, raw, where)
                settings._set(Value(dotted, value, Origin(source.layer, where)))


def _stored_tokens(source: Source, content: Any) -> dict[str, str]:
    if not isinstance(content, dict) or not all(isinstance(v, str) for v in content.values()):
        raise UsageError(f'{source.where}: [tokens] must be a table of "registry URL" = "token" strings',
                         hint="fix or delete it, then `strawpot login` again")
    return dict(content)


def _fold_package_tables(settings: Settings, source: Source, kind: Kind, content: Any) -> None:
    """`[agents.<name>]` params, and `[agents|skills.<name>.env]` values (from the global config only)."""
    if not isinstance(content, dict):
        return
    for name, table in content.items():
        if not isinstance(table, dict):
            continue  # `name = "^1"`: a requirement, nothing to set
        for key, raw in table.items():
            dotted = f"{kind.plural}.{name}.{key}"
            where = _at(source, dotted)
            if key == "env":
                _fold_env(settings, source, kind, name, raw, where)
            elif kind is Kind.AGENT and key not in _AGENT_RESERVED:
                settings.agents.setdefault(name, {})[key] = Value(dotted, raw, Origin(source.layer, where))


def _fold_env(settings: Settings, source: Source, kind: Kind, name: str, raw: Any, where: str) -> None:
    table = f"{kind.plural}.{name}.env"
    if source.layer != "global":
        raise UsageError(f"{where}: [{table}]: environment values do not belong in the project file (it is committed)",
                         hint=f"move them to the global config: `strawpot config set --global {table}.NAME VALUE`")
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise UsageError(f'{where}: [{table}] must be a table of NAME = "value" strings', hint="fix or delete it")
    env = settings.env_tables.setdefault((kind, name), {})
    for var, value in raw.items():
        env[var] = Value(f"{table}.{var}", value, Origin(source.layer, _at(source, f"{table}.{var}")))


def _fold_flat(settings: Settings, source: Source) -> None:
    """Env or flags: {dotted key: value}; env values are text and are parsed by the key's type."""
    for dotted, raw in source.data.items():
        key = SCHEMA[dotted]
        where = (key.env_var or dotted) if source.layer == "env" else source.where or dotted
        if source.layer == "env":
            raw = from_text(key, str(raw), where)
        value = check(key, raw, where)
        settings._set(Value(dotted, value, Origin(source.layer, where)))


def _nested(table: str, content: dict[str, Any]) -> list[tuple[str, Any]]:
    """The keys of a table, a sub-table the schema knows (`[runner.ray]`) flattened into dotted names."""
    found: list[tuple[str, Any]] = []
    for name, raw in content.items():
        sub = isinstance(raw, dict) and any(k.startswith(f"{table}.{name}.") for k in SCHEMA)
        found += [(f"{name}.{k}", v) for k, v in raw.items()] if sub else [(name, raw)]
    return found


def check(key: Key, raw: Any, where: str) -> Any:
    """`raw` as the key's type, or a UsageError naming `where` (a file and line, a variable, a flag) and the key."""

    def say(problem: str) -> str:
        return f"{where}: {key.name} {problem}"

    kind = key.type
    if not _of_type(kind, raw):
        raise UsageError(say(f"must be {_described(key)}, not {_shown(raw)}"), hint="fix the value or remove it")
    if kind == "string" and not raw.strip():
        raise UsageError(say("must not be empty"), hint="remove the key to use the default")
    if key.item is not None and not all(key.item.fullmatch(entry) for entry in raw):
        bad = next(entry for entry in raw if not key.item.fullmatch(entry))
        raise UsageError(say(f"must be a list like {key.item_example}; {_shown(bad)} is not"))
    if key.choices and raw not in key.choices:
        raise UsageError(say(f"must be one of {', '.join(key.choices)}, not {_shown(raw)}"))
    if kind == "number" and not math.isfinite(raw):
        raise UsageError(say(f"must be a finite number, not {_shown(raw)}"))
    if key.minimum is not None and raw < key.minimum:
        raise UsageError(say(f"must be at least {key.minimum:g}, not {_shown(raw)}"))
    if kind == "number":
        return float(raw)
    return tuple(raw) if kind == "list" else raw


def _of_type(kind: str, raw: Any) -> bool:
    if kind in ("integer", "number") and isinstance(raw, bool):
        return False
    accepted = {"boolean": bool, "integer": int, "number": int | float, "list": list | tuple}.get(kind, str)
    if kind == "list" and isinstance(raw, list | tuple):
        return all(isinstance(item, str) for item in raw)
    return isinstance(raw, accepted)


def from_text(key: Key, text: str, where: str) -> Any:
    """A value given as text (an environment variable, `config set`) parsed by the key's type."""

    def say(problem: str) -> str:
        return f"{where}: {key.name} {problem}"

    text = text.strip()
    try:
        if key.type == "integer":
            return int(text)
        if key.type == "number":
            return float(text)
    except ValueError:
        raise UsageError(say(f"must be {_described(key)}, not {text!r}")) from None
    if key.type == "boolean":
        lowered = text.lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise UsageError(say(f"must be true or false, not {text!r}"))
    if key.type == "list":
        return [item.strip() for item in text.split(",") if item.strip()]
    return text


def key_lines(text: str) -> dict[str, int]:
    """{dotted key: 1-based line} of a TOML text's keys and tables (enough to point at a setting)."""
    lines: dict[str, int] = {}
    table = ""
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if header := _HEADER.match(stripped):
            table = _dotted(header.group(1))
            lines.setdefault(table, number)
        elif assignment := _ASSIGN.match(stripped):
            name = _dotted(assignment.group(1))
            lines.setdefault(f"{table}.{name}" if table else name, number)
    return lines


_HEADER = re.compile(r"^\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_ASSIGN = re.compile(r"^((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*=")


def _dotted(text: str) -> str:
    parts = re.findall(r"\"[^\"]*\"|'[^']*'|[A-Za-z0-9_-]+", text)
    return ".".join(p.strip("\"'") for p in parts)


def _at(source: Source, dotted: str) -> str:
    line = source.lines.get(dotted) or source.lines.get(dotted.rpartition(".")[0])
    return f"{source.where}:{line}" if line else source.where


def _unknown(source: Source, dotted: str, message: str) -> str:
    return f"{_at(source, dotted)}: {message}"


def _close(dotted: str) -> str:
    from strawpot.model.suggest import did_you_mean  # difflib: only for a key that is not one
    suggestion = did_you_mean(dotted, SCHEMA, cutoff=0.75, show="'{}'")  # dotted keys share long prefixes
    return f" ({suggestion})" if suggestion else ""


def _described(key: Key) -> str:
    return {"string": "a string", "integer": "a whole number", "number": "a number", "boolean": "true or false",
            "list": "a list of strings", "choice": "one of " + ", ".join(key.choices)}[key.type]


def _shown(raw: Any) -> str:
    text = repr(raw)
    return text if len(text) <= 60 else text[:59] + "…"
