"""Generate the Python Denden stubs in orchestrator/_proto/ from proto/denden.proto."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent
DEFAULT_OUT = PROTO_DIR.parent / "orchestrator" / "_proto"
# The stub agent fixture ships its own copy (plain protoc output, imported as top-level modules),
# so the package stays independent of our code, as a real agent package would be.
FIXTURE_OUT = PROTO_DIR.parent / "fixtures" / "agents" / "stub-agent" / "agent"
# So does the denden skill fixture, whose `denden` program is the command-line client agents call.
FIXTURE_OUTS = (FIXTURE_OUT, PROTO_DIR.parent / "fixtures" / "skills" / "denden" / "client")
GENERATED = ("denden_pb2.py", "denden_pb2.pyi", "denden_pb2_grpc.py")
INIT_TEXT = '"""Generated Denden stubs (do not edit; run `python proto/generate.py`)."""\n'

# protoc writes top-level imports (`import denden_pb2 as ...`); ours live in a package.
_ABSOLUTE_IMPORT = re.compile(r"^import denden_pb2 as (\w+)$", re.MULTILINE)


def generate(out_dir: Path, *, package: bool = True) -> list[Path]:
    """Run protoc (grpcio-tools) on denden.proto; write package-relative stubs (or plain modules) to out_dir."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as raw:
        cmd = [
            sys.executable, "-m", "grpc_tools.protoc",
            f"-I{PROTO_DIR}",
            f"--python_out={raw}", f"--pyi_out={raw}", f"--grpc_python_out={raw}",
            str(PROTO_DIR / "denden.proto"),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"protoc failed ({proc.returncode}): {proc.stderr.strip()}")
        written = []
        for name in GENERATED if package else ("denden_pb2.py", "denden_pb2_grpc.py"):
            text = (Path(raw) / name).read_text(encoding="utf-8")
            if package:
                text = _ABSOLUTE_IMPORT.sub(r"from . import denden_pb2 as \1", text)
            else:  # outside the ruff-excluded orchestrator/_proto: mark as generated for the linter
                text = "# ruff: noqa\n" + text
            target = out_dir / name
            target.write_text(text, encoding="utf-8")
            written.append(target)
    if package:
        init = out_dir / "__init__.py"
        init.write_text(INIT_TEXT, encoding="utf-8")
        written.append(init)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="target directory of the package stubs")
    parser.add_argument("--fixture-out", type=Path, action="append", default=None,
                        help="a target of the fixtures' plain copies (repeatable; default: the stub agent's and "
                             "the denden skill's)")
    args = parser.parse_args(argv)
    written = generate(args.out)
    for out in args.fixture_out or FIXTURE_OUTS:
        written += generate(out, package=False)
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
