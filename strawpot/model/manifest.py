"""The project manifest `strawpot.toml`: read requirements and settings, edit without losing a byte."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from strawpot.model.errors import UsageError
from strawpot.model.fs import OWN_FILE_HINT, atomic_write, read_own_text
from strawpot.model.kinds import KIND_ORDER, Kind
from strawpot.model.slugs import slug_error
from strawpot.model.toml_text import not_utf8, parse_toml, remembered
from strawpot.model.toml_text import remember as keep_parse
from valueclass import Record, field

TYPE_CHECKING = False  # typing is not imported on the read-only commands' path
if TYPE_CHECKING:
    from typing import Any

    import tomlkit
    import tomlkit.exceptions


class ManifestEntry(Record):
    """One requirement of the project: `[<kinds>] name = "spec"` or a table with `version`."""

    kind: Kind
    name: str
    spec: str
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def path(self) -> str | None:
        """The folder of a path source (`{ path = "../skills/x" }`), relative to the manifest's folder."""
        value = self.settings.get("path")
        return value if isinstance(value, str) else None


class Manifest:
    """A parsed `strawpot.toml`; edits change only the entries they touch (a manifest from `read` takes none)."""

    # `load` of a file that does not exist: plain tables until an edit other than `set_spec` of a plain string needs
    # tomlkit's document (`_document` makes it then); a cold install into a new project never imports tomlkit
    _new = False

    def __init__(self, path: Path, document: tomlkit.TOMLDocument | dict[str, Any]) -> None:
        self.path = path
        self.doc = document

    @classmethod
    def read(cls, path: Path, *, remember: bool = False) -> Manifest:
        """The manifest to read only, parsed by `tomllib` alone (tomlkit, which keeps the file's layout for edits,
        is most of a read-only command's imports), or read back from the cache folder with `remember`
        (`parse_toml`: for what a command shows); an edit of it raises TypeError."""
        if not path.exists():
            return cls(path, {})
        text = _text(path)
        kept = remembered(text, path) if remember else None
        manifest = cls(path, parse_toml(text, path, hint=_HINT) if kept is None else kept)
        manifest.entries()
        manifest._refuse_mistyped_tables()
        if remember and kept is None and not _may_hold_secrets(manifest.doc):
            keep_parse(text, path, manifest.doc)
        return manifest

    @classmethod
    def load(cls, path: Path) -> Manifest:
        if not path.exists():
            new = cls(path, {})
            new._new = True
            return new
        import tomlkit
        import tomlkit.exceptions

        text, hint = _text(path), _HINT
        parse_toml(text, path, hint=hint)  # the strict reader first: repeated keys, depth, every error placed
        try:
            doc = tomlkit.parse(text)
        except tomlkit.exceptions.ParseError as exc:
            raise UsageError(f"{path}:{exc.line}:{exc.col}: invalid TOML: {_parse_reason(exc)}", hint=hint) from None
        except (tomlkit.exceptions.TOMLKitError, ValueError, RecursionError) as exc:  # accepted by tomllib only
            raise UsageError(f"{path}:1:1: invalid TOML: {exc}", hint=hint) from None
        manifest = cls(path, doc)
        manifest.entries()  # validate shapes up front, so every command fails the same way
        manifest._refuse_mistyped_tables()
        return manifest

    def _refuse_mistyped_tables(self) -> None:
        """`[skill]` for `[skills]` would otherwise be read as no requirements at all."""
        from strawpot.model.project_tables import mistyped_table

        found = mistyped_table(self.doc)
        if found is not None:
            plurals = ", ".join(f"[{kind.plural}]" for kind in KIND_ORDER)
            raise UsageError(f"{self.path}: {found.message()}",
                             hint=f"rename [{found.table}] to [{found.wanted}]; strawpot reads requirements from {plurals}")

    def entries(self) -> list[ManifestEntry]:
        """Every requirement, in kind order then file order."""
        result: list[ManifestEntry] = []
        for kind in KIND_ORDER:
            section = self.doc.get(kind.plural)
            if section is None:
                continue
            if not isinstance(section, dict):
                raise UsageError(f"{self.path}: [{kind.plural}] must be a table of name = \"specifier\" entries")
            for name, value in section.items():
                entry = self._entry(kind, str(name), value)
                if not _settings_only(kind, value):
                    result.append(entry)
        return result

    def _entry(self, kind: Kind, name: str, value: Any) -> ManifestEntry:
        where = f"{self.path}: {kind.plural}.{name}"
        if err := slug_error(name):
            raise UsageError(f"{self.path}: [{kind.plural}] {err}")
        if isinstance(value, str):
            return ManifestEntry(kind, name, value.strip() or "*")
        if isinstance(value, dict):
            from strawpot.model.project_tables import unknown_requirement_key

            if problem := unknown_requirement_key(kind, name, value):
                raise UsageError(f"{self.path}: {problem}", hint="fix the key's name, or remove it")
            spec = value.get("version", "*")
            if not isinstance(spec, str):
                raise UsageError(f"{where}.version must be a string such as \"^1.2\"")
            settings = {str(k): _plain(v) for k, v in value.items() if k != "version"}
            if "path" in settings and not (isinstance(settings["path"], str) and settings["path"].strip()):
                raise UsageError(f"{where}.path must be a folder such as \"../skills/{name}\"")
            return ManifestEntry(kind, name, spec.strip() or "*", settings)
        raise UsageError(f"{where} must be a version specifier string or a table with 'version'")

    def get(self, kind: Kind, name: str) -> ManifestEntry | None:
        """The requirement on `name`, or None (an `[agents.<name>]` table without `version` is not one)."""
        section = self.doc.get(kind.plural)
        if not isinstance(section, dict) or name not in section or _settings_only(kind, section[name]):
            return None
        return self._entry(kind, name, section[name])

    # -- settings shared with the orchestrator ---------------------------------------------------

    def table(self, key: str) -> dict[str, Any]:
        value = self.doc.get(key)
        return _plain(value) if isinstance(value, dict) else {}

    def role_default_agent(self, slug: str) -> str | None:
        entry = self.get(Kind.ROLE, slug)
        agent = entry.settings.get("default_agent") if entry else None
        return agent if isinstance(agent, str) else None

    def trust(self, ids: Iterable[str]) -> list[str]:
        """Add package ids to `[scripts] trusted` (kept in file order); return those that were not there."""
        current = self.table("scripts").get("trusted", [])
        added = [pid for pid in dict.fromkeys(ids) if pid not in current]
        if not added:
            return []
        import tomlkit

        doc = self._document()
        section = doc.get("scripts")
        if section is None:
            section = tomlkit.table()
            doc.add("scripts", section)
        if "trusted" not in section:
            section["trusted"] = tomlkit.array()
        for pid in added:
            section["trusted"].append(pid)
        return added

    def dependency_hash(self) -> str:
        """`strawpot.model.tree_facts.dependency_hash` of this manifest (what the early no-op answer computes
        from `tomllib`): a changed requirement or path source's content makes the lock stale."""
        from strawpot.model.tree_facts import MissingPathSource, Unhashable, dependency_hash

        self.entries()  # every shape problem in the reader's words first
        try:
            return dependency_hash(self.path.parent, _plain(self.doc))
        except MissingPathSource as exc:
            raise UsageError(
                f"{self.path}: {exc.kind.plural}.{exc.name}: path {exc.path!r} is not a folder "
                f"({(self.path.parent / exc.path).resolve()} does not exist)",
                hint="fix the path, or check out the repository that holds it beside this project",
            ) from None
        except Unhashable as exc:
            raise UsageError(f"{self.path}: {exc}") from None

    # -- edits -------------------------------------------------------------------------------------

    def set_spec(self, kind: Kind, name: str, spec: str) -> None:
        """Add or change a requirement; a table entry keeps its other keys."""
        if self._new and type(self.doc) is dict:  # a new manifest's plain tables hold strings only
            self.doc.setdefault(kind.plural, {})[name] = spec
            return
        import tomlkit
        from tomlkit.items import InlineTable, Table

        doc = self._document()
        section = doc.get(kind.plural)
        if section is None:
            section = tomlkit.table()
            doc.add(kind.plural, section)
        current = section.get(name)
        if isinstance(current, InlineTable | Table):
            current["version"] = spec
        else:
            section[name] = spec

    def remove(self, kind: Kind, name: str) -> bool:
        self._document()
        section = self.doc.get(kind.plural)
        if not isinstance(section, dict) or name not in section or _settings_only(kind, section[name]):
            return False
        current = section[name]
        if kind is Kind.AGENT and isinstance(current, dict) and set(current) - {"version"}:
            del current["version"]  # the agent's params stay, as settings only
        else:
            del section[name]
        return True

    def dumps(self) -> str:
        if self._new and type(self.doc) is dict and (text := _new_text(self.doc)) is not None:
            return text
        import tomlkit

        return tomlkit.dumps(self._document())

    def _document(self) -> tomlkit.TOMLDocument:
        """The document to edit, from `load` (a manifest from `read` has no layout to keep: TypeError)."""
        import tomlkit

        if self._new and type(self.doc) is dict:
            self.doc = _as_document(self.doc)
        if not isinstance(self.doc, tomlkit.TOMLDocument):
            raise TypeError(f"{self.path}: read with Manifest.read, which takes no edits; use Manifest.load")
        return self.doc

    def save(self) -> None:
        atomic_write(self.path, self.dumps())


_HINT = "fix the file by hand; strawpot never rewrites a file it cannot parse"
_BARE_KEY = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _text(path: Path) -> str:
    try:
        return read_own_text(path)
    except UnicodeDecodeError as exc:
        raise UsageError(not_utf8(path, exc)) from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the manifest: {exc.strerror or exc}", hint=OWN_FILE_HINT) from None


def _as_document(tables: dict[str, dict[str, str]]) -> tomlkit.TOMLDocument:
    """A new manifest's plain tables as the tomlkit document `set_spec` would have built them edit by edit."""
    import tomlkit

    doc = tomlkit.document()
    for key, entries in tables.items():
        table = tomlkit.table()
        doc.add(key, table)
        for name, spec in entries.items():
            table[name] = spec
    return doc


def _new_text(tables: dict[str, dict[str, str]]) -> str | None:
    """What `tomlkit.dumps(_as_document(tables))` writes, for bare keys and strings with nothing to escape (held
    equal by tests/model/test_manifest_new.py); None for anything else, which tomlkit writes."""
    blocks = []
    for key, entries in tables.items():
        lines = [f"[{key}]"]
        for name, spec in entries.items():
            if not (_bare(name) and isinstance(spec, str) and spec.isascii() and spec.isprintable()
                    and '"' not in spec and "\\" not in spec):
                return None
            lines.append(f'{name} = "{spec}"')
        if len(lines) == 1 or not _bare(key):
            return None
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def _bare(key: str) -> bool:
    """Whether TOML writes `key` unquoted."""
    return bool(key) and set(key) <= _BARE_KEY


def _settings_only(kind: Kind, value: Any) -> bool:
    """`[agents.<name>]` without `version` holds settings (params) only: never a requirement, never in the lock."""
    return kind is Kind.AGENT and isinstance(value, dict) and "version" not in value and "path" not in value


def _plain(value: Any) -> Any:
    """tomlkit items as plain Python values."""
    return value.unwrap() if hasattr(value, "unwrap") else value


def _parse_reason(exc: tomlkit.exceptions.ParseError) -> str:
    message = str(exc)
    return message.split(" at line ")[0] if " at line " in message else message


def _may_hold_secrets(doc: object) -> bool:
    """Whether a manifest holds a table or key secrets go in (`[agents.<name>.env]`, a token): the settings layer
    refuses them in a project file, but `tree` does not read settings, and such a file's parse is not kept."""
    if isinstance(doc, dict):
        return any(str(key) in ("env", "token", "tokens") or _may_hold_secrets(value) for key, value in doc.items())
    return isinstance(doc, list) and any(_may_hold_secrets(item) for item in doc)
