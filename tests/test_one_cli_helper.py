"""Tests run the `strawpot` command one way, tests/_cli.py: no test module builds its own command line for it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
HELPER = TESTS / "_cli.py"
# Ways of naming the command that bypass tests/_cli.py's STRAWPOT: `-m strawpot.cli`, a `-c` one-liner calling
# main(), or the console script beside the interpreter.
ARGV = re.compile(r"""["']-m["']\s*,\s*["']strawpot\.cli["']|strawpot\.cli import main;"""
                  r"""|(?:executable\)\.parent|BIN)\s*/\s*["']strawpot["']""")
RUNS = {"run", "check_output", "check_call", "call"}  # a Popen may take STRAWPOT (a pty, a stream, a signal)


def _starts_with_strawpot(node: ast.expr) -> bool:
    """Whether a command line starts with STRAWPOT (a probe or prefix program that runs it is left alone)."""
    first = node.elts[0] if isinstance(node, ast.List | ast.Tuple) and node.elts else node
    first = first.value if isinstance(first, ast.Starred) else first
    return isinstance(first, ast.Name) and first.id == "STRAWPOT"


def _main_from_cli(nodes: list[ast.AST]) -> set[str]:
    """The local names under which a module (all its `nodes`) imports strawpot.cli's main()."""
    return {alias.asname or alias.name for node in nodes if isinstance(node, ast.ImportFrom)
            and node.module == "strawpot.cli" for alias in node.names if alias.name == "main"}


def second_definitions(source: str) -> list[str]:
    """Each place in a test module's `source` that runs `strawpot` another way than tests/_cli.py, with its line."""
    found = [f"line {source.count(chr(10), 0, m.start()) + 1}: builds the command line ({m.group(0)!r})"
             for m in ARGV.finditer(source)]
    nodes = list(ast.walk(ast.parse(source)))  # walked once: ~270 modules, the suite's longest pure-Python check
    mains = _main_from_cli(nodes)
    for node in nodes:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "STRAWPOT" for t in targets):
                found.append(f"line {node.lineno}: defines STRAWPOT (import it from tests._cli)")
        elif isinstance(node, ast.Call) and node.args and _starts_with_strawpot(node.args[0]):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in RUNS:
                found.append(f"line {node.lineno}: subprocess.{name} of STRAWPOT (call tests._cli.strawpot)")
        elif mains and isinstance(node, ast.FunctionDef) and not node.name.startswith("test_") and any(
                isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in mains
                for call in ast.walk(node)):
            found.append(f"line {node.lineno}: {node.name}() runs main() in-process (use tests._cli.in_process)")
    return found


def test_no_test_module_runs_strawpot_another_way() -> None:
    problems = [f"{path.relative_to(TESTS.parent)} {problem}" for path in sorted(TESTS.rglob("*.py"))
                if path not in (HELPER, Path(__file__).resolve()) for problem in second_definitions(path.read_text(encoding="utf-8"))]
    assert not problems, "run the command with tests/_cli.py:\n" + "\n".join(problems)


def test_each_other_way_is_caught() -> None:
    ways = {
        'STRAWPOT = [sys.executable, "-m", "strawpot.cli"]\n': ["builds the command line", "defines STRAWPOT"],
        'X = [sys.executable, "-c", "import sys; from strawpot.cli import main; sys.exit(main())"]\n':
            ["builds the command line"],
        'X = str(Path(sys.executable).parent / "strawpot")\n': ["builds the command line"],
        'X = str(BIN / "strawpot")\n': ["builds the command line"],
        "def run(*a):\n    return subprocess.run([*STRAWPOT, *a], capture_output=True)\n": ["subprocess.run of STRAWPOT"],
        "from strawpot.cli import main\ndef run(capsys, *a):\n    return main(list(a))\n": ["run() runs main()"],
    }
    for source, said in ways.items():
        found = second_definitions(source)
        assert len(found) == len(said) and all(s in f for s, f in zip(said, found, strict=True)), (source, found)
    allowed = ("from tests._cli import STRAWPOT, strawpot\nproc = subprocess.Popen([*STRAWPOT, 'ui'])\n"
               "done = subprocess.run([*prefix, *STRAWPOT, 'start'])\nconfig = home / '.config' / 'strawpot'\n"
               "from strawpot.cli import main\ndef test_x():\n    assert main(['--help']) == 0\n")
    assert second_definitions(allowed) == []
