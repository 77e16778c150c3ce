"""The README demo: an embedded registry, the fixtures published to it, a role installed and locked, the
realistic fixture agent (no executable in its package: a trusted install script builds its wrapper) installed
and trusted, and a headless session in which it plays the lead, who delegates to the reviewer, who delegates
to the implementer; each drives the fake-coder CLI (fixtures/tools), which writes a file in the project."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
DEMO = ROOT / ".demo"
TASK = "delegate:reviewer:delegate:implementer:add a greeting to the README"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def step(title: str) -> None:
    print(f"\n== {title}", flush=True)


def strawpot(*args: str, cwd: Path, env: dict[str, str], capture: bool = False) -> str:
    print(f"$ strawpot {' '.join(args)}", flush=True)
    result = subprocess.run(
        [str(BIN / "strawpot"), *args], cwd=cwd, env=env, check=True, text=True,
        stdout=subprocess.PIPE if capture else None,
    )
    return result.stdout or ""


def show_file(path: Path) -> None:
    """Print a file under its own `$ cat` line, so it is never read as the output of the command above."""
    print(f"$ cat {path.name}", flush=True)
    print(path.read_text(), flush=True)


def main() -> int:
    if DEMO.exists():
        print(f"removing the previous demo's {DEMO.name}/ (the demo starts afresh)", flush=True)
    shutil.rmtree(DEMO, ignore_errors=True)
    project = DEMO / "project"
    project.mkdir(parents=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "STRAWPOT_REGISTRY_URL": url,
        "STRAWPOT_CACHE_DIR": str(DEMO / "cache"),
        "STRAWPOT_CONFIG_DIR": str(DEMO / "config"),
        "STRAWPOT_HOME": str(DEMO / "home"),
        # fake-coder (the CLI fixture-coder wraps) runs `python3` and needs grpcio for Denden: the venv has it.
        "PATH": os.pathsep.join([str(ROOT / "fixtures" / "tools"), str(BIN), os.environ.get("PATH", "")]),
        "FIXTURE_CODER_TOKEN": "demo-token",  # the env var fixture-coder requires
    }
    step("Start the embedded registry (SQLite + blob store, nothing else to run)")
    token = strawpot("registry", "token", "create", "--user", "demo", "--admin", "--data", str(DEMO / "registry"),
                     cwd=DEMO, env=env, capture=True).strip().splitlines()[-1]
    env["STRAWPOT_TOKEN"] = token
    server = subprocess.Popen(
        [str(BIN / "strawpot"), "registry", "serve", "--port", str(port), "--data", str(DEMO / "registry")],
        cwd=DEMO, env=env,
    )
    try:
        wait_for(url)
        step("Publish the fixture skills, agents and roles: one command, each package after what it depends on")
        folders = [str(path.relative_to(ROOT)) for kind in ("skills", "agents", "roles")
                   for path in sorted((ROOT / "fixtures" / kind).iterdir()) if path.is_dir()]
        strawpot("publish", *folders, cwd=ROOT, env=env)
        print(f"browse the registry in a web browser: {url}/ (the lead role's page: {url}/roles/lead)", flush=True)
        step("Show the fixture agent: no executable in the package, an install script builds its wrapper")
        strawpot("info", "agent", "fixture-coder", cwd=project, env=env)
        step("Install and lock the lead role (its skills, the roles it delegates to, its agent), fixture-coder, and "
             "the denden skill every agent gets ([session] always_stage: its `denden` program on PATH)")
        strawpot("install", "role", "lead", "agent", "fixture-coder", "skill", "denden", cwd=project, env=env)
        step("Trust fixture-coder's install script explicitly: it runs now and builds the wrapper")
        strawpot("trust", "agent:fixture-coder", cwd=project, env=env)
        strawpot("tree", cwd=project, env=env)
        strawpot("verify", cwd=project, env=env)
        show_file(project / "strawpot.toml")
        step("Start a headless session with fixture-coder: lead → reviewer → implementer, on the locked environment")
        strawpot("start", "--role", "lead", "--runtime", "fixture-coder", "--headless", "--task", TASK,
                 cwd=project, env=env)
        for made in sorted(project.glob("fake-coder-*.txt")):
            print(f"{made.name}: {made.read_text().splitlines()[0]}")
        strawpot("sessions", cwd=project, env=env)
    finally:
        server.terminate()
        server.wait(timeout=10)
    # The demo's registry listens on a free port (a fixed one could be the one your own registry of the README's
    # tour uses, a different store): the project's lock names this registry, which stops now. Say so once, here;
    # install and lock say the rest (which registry a package is on, which packages move).
    print(f"\nnote: .demo/project's strawpot.lock names this demo's registry ({url}), which is stopped now; "
          "there, `strawpot install` uses the registry you name (STRAWPOT_REGISTRY_URL, --registry) and "
          "says which packages it is missing and which move to it")
    print("\ndemo finished: everything it made is under .demo/")
    return 0


def wait_for(url: str) -> None:
    import httpx

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{url}/api/v1/skills", timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit(f"the registry did not start at {url}")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except subprocess.CalledProcessError as exc:
        print(f"\ndemo failed: `{' '.join(map(str, exc.cmd[1:]))}` exited with {exc.returncode}", file=sys.stderr)
        sys.exit(1)
