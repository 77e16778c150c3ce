"""Imports go one way only (DESIGN §2): walk every module with `ast` and fail on a wrong arrow."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIRST_PARTY = ("strawpot", "hub_client", "resolver", "orchestrator", "registry_server", "dashboard", "sandbox", "valueclass")

# A layer (module prefix) and the first-party layers it may import besides itself.
# Anything under `strawpot` that is not `strawpot.model` is the composition root and may import everything.
RULES: dict[str, tuple[str, ...]] = {
    # valueclass (the base of every layer's value classes) imports nothing of ours; every layer may import it:
    # VALUECLASS_NOTE says why. LEAF_BELOW_ALL is added to each rule below.
    "valueclass": (),
    "resolver": (),
    "hub_client": (),
    "strawpot.model": ("resolver",),
    # The sandbox (walls, bubblewrap) sits below both users of it: the orchestrator's agents and the install
    # scripts. Install never reaches into the orchestrator for it.
    "sandbox": ("strawpot.model",),
    "orchestrator": ("strawpot.model", "sandbox"),
    "strawpot.install": ("strawpot", "hub_client", "resolver", "sandbox"),
    # DESIGN §2 lets the registry use the model only; it also runs our PubGrub solver behind `/resolve`:
    # the layering note that allows it is REGISTRY_RESOLVER_NOTE (the solver is a stdlib-only leaf, no cycle).
    "registry_server": ("strawpot.model", "resolver"),
    # A mirror (`registry serve --upstream`) fetches from upstream through our own client, and only its package
    # does: REGISTRY_HUB_CLIENT_NOTE says why (hub_client imports nothing of ours, no cycle).
    "registry_server.mirror": ("registry_server", "strawpot.model", "resolver", "hub_client"),
    # `strawpot ui` reads run folders through the orchestrator and the model, never the registry or commands.
    "dashboard": ("orchestrator", "strawpot.model"),
}

LEAF_BELOW_ALL = "valueclass"
RULES = {layer: allowed if layer == LEAF_BELOW_ALL else (*allowed, LEAF_BELOW_ALL) for layer, allowed in RULES.items()}
# Where the arrows RULES allows beyond DESIGN §2 are explained: (file, heading of its section).
VALUECLASS_NOTE = ("docs/architecture.md", "## valueclass: one leaf below the leaves")
REGISTRY_RESOLVER_NOTE = ("docs/architecture.md", "## registry_server → resolver")
REGISTRY_HUB_CLIENT_NOTE = ("docs/architecture.md", "## registry_server/mirror → hub_client")

# Inside the composition root (`strawpot/`), the services sit below the commands: they never import a
# command module or the console (presentation is the commands' job, as in PDM's cli/commands).
SERVICES = ("strawpot.install", "strawpot.publishing", "strawpot.config_files", "strawpot.registry_choice", "strawpot.hub")
PRESENTATION = ("strawpot.commands", "strawpot.console", "strawpot.cli", "strawpot.cli_group")


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str) -> str | None:
    """The most specific restricted layer a module belongs to, or None for the composition root."""
    matches = [prefix for prefix in RULES if _within(module, prefix)]
    return max(matches, key=len) if matches else None


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[int, str, list[str]]]:
    """(line, imported module, candidate submodules) for every import statement, relative ones resolved."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                target = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield node.lineno, target, [f"{target}.{alias.name}" for alias in node.names]


def violations(root: Path) -> list[str]:
    """Every import under `root` that goes against RULES, as `file:line: a imports b`."""
    found: list[str] = []
    for top in FIRST_PARTY:
        for path in sorted((root / top).rglob("*.py")):
            if ".venv" in path.parts:
                continue
            module = module_name(path, root)
            layer = layer_of(module)
            if layer is None:
                continue
            allowed = (layer, *RULES[layer])
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for line, target, submodules in imported(tree, module, path.name == "__init__.py"):
                if target.split(".")[0] not in FIRST_PARTY:
                    continue
                if any(_within(name, ok) for name in [target, *submodules] for ok in allowed):
                    continue
                found.append(f"{path.relative_to(root)}:{line}: {module} ({layer}) imports {target}")
    return sorted(found)


def test_no_wrong_arrows() -> None:
    assert violations(ROOT) == []


def service_violations(root: Path) -> list[str]:
    """Every import of a command module or the console from a service module under `strawpot/`."""
    found: list[str] = []
    for path in sorted((root / "strawpot").rglob("*.py")):
        module = module_name(path, root)
        if not any(_within(module, service) for service in SERVICES):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, target, submodules in imported(tree, module, path.name == "__init__.py"):
            if any(_within(name, shown) for name in [target, *submodules] for shown in PRESENTATION):
                found.append(f"{path.relative_to(root)}:{line}: {module} imports {target}")
    return found


def test_services_never_import_the_commands_or_the_console(tmp_path: Path) -> None:
    assert service_violations(ROOT) == []
    _write(tmp_path, {"strawpot/install/x.py": "def f():\n    from strawpot.console import err_console\n",
                      "strawpot/publishing/y.py": "from strawpot.commands import _options\n",
                      "strawpot/commands/z.py": "from strawpot.console import out_console\n"})
    assert service_violations(tmp_path) == [
        "strawpot/install/x.py:2: strawpot.install.x imports strawpot.console",
        "strawpot/publishing/y.py:1: strawpot.publishing.y imports strawpot.commands",
    ]


def _note_body(note: tuple[str, str]) -> str:
    """The text of the section `note` = (file, heading) names; fails when the file has no such section."""
    doc, heading = note
    lines = (ROOT / doc).read_text(encoding="utf-8").splitlines()
    assert heading in lines, f"{doc} has no section {heading!r}"
    section = lines[lines.index(heading) + 1:]
    return " ".join(section[:next((i for i, line in enumerate(section) if line.startswith("## ")), len(section))])


def test_the_layering_note_rules_cite_exists() -> None:
    """The note RULES cites for `registry_server → resolver` is there, and says why the arrow is allowed."""
    body = _note_body(REGISTRY_RESOLVER_NOTE)
    assert "resolve" in body and "solver" in body and "cycle" in body
    assert "resolver" in RULES["registry_server"]


def test_the_mirror_note_rules_cite_exists() -> None:
    """The note for `registry_server.mirror → hub_client` is there and gives its reason; the rest of the server
    still may not import the client."""
    body = _note_body(REGISTRY_HUB_CLIENT_NOTE)
    assert "upstream" in body and "cycle" in body and "sha256" in body
    assert "hub_client" in RULES["registry_server.mirror"] and "hub_client" not in RULES["registry_server"]


def test_the_valueclass_note_rules_cite_exists() -> None:
    """The note for the one leaf every layer may import says why; the leaf itself imports nothing of ours."""
    body = _note_body(VALUECLASS_NOTE)
    assert "dataclass" in body and "cycle" in body
    assert RULES[LEAF_BELOW_ALL] == () and all(LEAF_BELOW_ALL in RULES[layer] for layer in RULES if layer != LEAF_BELOW_ALL)


def test_every_layer_is_walked() -> None:
    for prefix in RULES:
        assert (ROOT / prefix.replace(".", "/")).is_dir(), prefix
    assert layer_of("strawpot.model.package") == "strawpot.model"
    assert layer_of("strawpot.commands.publish") is None
    assert layer_of("strawpot") is None


# -- the checker itself catches what it must ----------------------------------------------------------


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_checker_flags_each_wrong_arrow(tmp_path: Path) -> None:
    _write(tmp_path, {
        "resolver/__init__.py": "import strawpot\n",
        "hub_client/_client.py": "def f():\n    from resolver import Version\n",  # inside a function too
        "strawpot/__init__.py": "",
        "strawpot/model/package.py": "from resolver import Version\nfrom strawpot.config_files import x\n",
        "strawpot/model/lockfile.py": "from ..hub import open_client\nfrom . import kinds\n",
        "strawpot/commands/publish.py": "import hub_client, registry_server, orchestrator\n",
        "orchestrator/runtime.py": "from strawpot import model\nfrom strawpot import console\nimport resolver\n",
        "registry_server/app.py": "from strawpot.model import archive\nimport resolver\nimport hub_client\n"
        "from orchestrator import policy\n",
        "sandbox/walls.py": "from strawpot.model import errors\nfrom orchestrator import session\n",
        "strawpot/install/scripts.py": "from sandbox.walls import Walls\nfrom orchestrator.sandbox import x\n",
    })
    assert violations(tmp_path) == [
        "hub_client/_client.py:2: hub_client._client (hub_client) imports resolver",
        "orchestrator/runtime.py:2: orchestrator.runtime (orchestrator) imports strawpot",
        "orchestrator/runtime.py:3: orchestrator.runtime (orchestrator) imports resolver",
        "registry_server/app.py:3: registry_server.app (registry_server) imports hub_client",
        "registry_server/app.py:4: registry_server.app (registry_server) imports orchestrator",
        "resolver/__init__.py:1: resolver (resolver) imports strawpot",
        "sandbox/walls.py:2: sandbox.walls (sandbox) imports orchestrator",
        "strawpot/install/scripts.py:2: strawpot.install.scripts (strawpot.install) imports orchestrator.sandbox",
        "strawpot/model/lockfile.py:1: strawpot.model.lockfile (strawpot.model) imports strawpot.hub",
        "strawpot/model/package.py:2: strawpot.model.package (strawpot.model) imports strawpot.config_files",
    ]


# -- no module imports itself back, even through a function-level import ------------------------------


def import_cycles(root: Path, top: str) -> list[list[str]]:
    """Every cycle among the modules of package `top` (imports anywhere in a file, `__init__` excluded)."""
    graph: dict[str, set[str]] = {}
    for path in sorted((root / top).rglob("*.py")):
        if path.name == "__init__.py" or "_proto" in path.parts:
            continue
        module = module_name(path, root)
        tree = _without_type_checking(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        graph[module] = set()
        for _, target, submodules in imported(tree, module, False):
            graph[module].update(name for name in [target, *submodules] if _within(name, top) and name != top)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module] & graph.keys()):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target):], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    return cycles


def _without_type_checking(tree: ast.Module) -> ast.Module:
    """The module minus its `if TYPE_CHECKING:` blocks (type-only imports never run)."""

    class Strip(ast.NodeTransformer):
        def visit_If(self, node: ast.If) -> ast.AST | list[ast.stmt]:
            if isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
                return node.orelse
            self.generic_visit(node)
            return node

    stripped = Strip().visit(tree)
    assert isinstance(stripped, ast.Module)
    return stripped


def test_no_import_cycles_inside_a_package() -> None:
    for top in FIRST_PARTY:
        assert import_cycles(ROOT, top) == [], top


def test_cycle_checker_sees_a_lazy_import(tmp_path: Path) -> None:
    _write(tmp_path, {
        "resolver/__init__.py": "",
        "resolver/a.py": "from resolver.b import x\n",
        "resolver/b.py": "def f():\n    from resolver.a import y\n",
        "resolver/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from resolver.d import T\n",
        "resolver/d.py": "from resolver.c import z\n",
    })
    assert import_cycles(tmp_path, "resolver") == [["resolver.a", "resolver.b", "resolver.a"]]
