"""Benchmark: overhead of one delegation to a no-op agent, ours against strawpot 0.1.114, same stub agent.

Both orchestrators run headless with the same project (fixtures/agents/stub-agent bound to every role)
and the same orchestrator task, `delegate-bench:N:reviewer:noop`: the root stub agent sends N delegations
one after another over Denden and times each round trip (request in, result out) on the client side.
The overhead of a delegation is that latency minus the no-op agent's own run time, measured by running
the very command the wrapper builds, directly, as many times. Each task text is distinct so 0.1.114's
delegation cache never answers.

    python benchmarks/bench_delegation.py [--n 20] [--denden unix|tcp] [--legacy-venv DIR] [--no-legacy]

`--denden` picks our transport (`[denden] transport`): the private Unix socket (default) or loopback TCP,
where every call carries the run's token.

strawpot 0.1.114 installs a package and a console script with our name, so it lives in a venv of its
own, created here on first use (`python3 -m venv` + pip).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from strawpot.model.kinds import Kind  # noqa: E402
from strawpot.model.lockfile import LockedDependency, LockedFile, LockedPackage, LockedTool, Lockfile  # noqa: E402
from strawpot.model.manifest import Manifest  # noqa: E402
from strawpot.model.package_folder import load_package  # noqa: E402

STUB = ROOT / "fixtures" / "agents" / "stub-agent"
LEGACY = "strawpot==0.1.114"
ROLES = {
    "orchestrator": "---\nname: orchestrator\ndescription: Sends work out\nmetadata:\n  strawpot:\n"
                    "    dependencies:\n      roles: [reviewer]\n---\n\nDelegate.\n",
    "reviewer": "---\nname: reviewer\ndescription: Reviews\n---\n\nReview.\n",
}


def install(state: Path, kind: Kind, name: str, version: str, source: Path) -> LockedPackage:
    target = state / kind.plural / name
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", ".*"))
    (target / ".version").write_text(version + "\n")
    files = [
        LockedFile(p.relative_to(target).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_size,
                   bool(p.stat().st_mode & 0o100))
        for p in sorted(target.rglob("*")) if p.is_file() and p.name != ".version"
    ]
    pkg = load_package(target, kind)
    return LockedPackage(kind, name, version, "bench://", None, None, tuple(files),
                         tuple(LockedDependency(d.kind, d.name, d.spec) for d in pkg.dependencies),
                         tuple(LockedTool(t.name, t.description, dict(t.install)) for t in pkg.tools.values()))


def build_project(root: Path, agent_python: str, denden: str | None = None, legacy: bool = False) -> Path:
    root.mkdir(parents=True)
    state = root / ".strawpot"
    locked = [install(state, Kind.AGENT, "stub-agent", "0.1.0", STUB)]
    for name, text in ROLES.items():
        src = root / "_src" / name
        src.mkdir(parents=True)
        (src / "ROLE.md").write_text(text)
        locked.append(install(state, Kind.ROLE, name, "1.0.0", src))
    shutil.rmtree(root / "_src")
    (root / "strawpot.toml").write_text(
        # 0.1.114 reads these top-level keys; ours refuses `memory = ""` (`[memory]` is a table for us)
        ('runtime = "stub-agent"\nmemory = ""\nskip_update_check = true\n\n' if legacy else "")
        + '[roles]\norchestrator = "*"\nreviewer = "*"\n\n'
        f'[agents.stub-agent]\nversion = "*"\npython = {json.dumps(agent_python)}\n\n'
        '[orchestrator]\nrole = "orchestrator"\nruntime = "stub-agent"\n\n'
        '[policy]\nagent_timeout = 60\n\n[session]\npull_before_session = "never"\n\n[trace]\nenabled = false\n'
        + (f'\n[denden]\ntransport = "{denden}"\n' if denden else "")
    )
    manifest = Manifest.load(root / "strawpot.toml")
    Lockfile(tuple(locked), manifest.dependency_hash(), "bench").write(root / "strawpot.lock")
    return root


def agent_own_time(project: Path, agent_python: str, n: int) -> float:
    """Median wall time of the no-op agent command itself, as the wrapper builds it."""
    ws = project / "agent-ws"
    ws.mkdir()
    cmd = [agent_python, str(project / ".strawpot/agents/stub-agent/agent/stub_agent.py"), "--workspace", str(ws),
           "--config", json.dumps({"python": agent_python})]
    times = []
    for i in range(n):
        started = time.perf_counter()
        subprocess.run([*cmd, "--task", f"noop\n#{i}"], check=True, cwd=project, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def run_start(argv: list[str], project: Path, env: dict[str, str], n: int) -> list[float]:
    started = time.perf_counter()
    proc = subprocess.run([*argv, "start", "--headless", "--task", f"delegate-bench:{n}:reviewer:noop"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - started
    results = [p for p in (project / ".strawpot").rglob("result") if "latencies" in p.read_text()]
    if proc.returncode != 0 or not results:
        raise SystemExit(f"{argv[0]} start failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    data = json.loads(results[0].read_text().splitlines()[-1])
    if data["failures"]:
        raise SystemExit(f"delegations failed: {data['failures'][:3]}")
    print(f"  ({argv[-1] if len(argv) == 1 else 'ours'}: whole run {wall:.2f}s for {n} delegations)")
    return data["latencies"]


def legacy_strawpot(venv: Path) -> Path:
    exe = venv / "bin" / "strawpot"
    if not exe.exists():
        print(f"creating {venv} with {LEGACY} ...", file=sys.stderr)
        subprocess.run(["python3", "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", LEGACY], check=True)
    return exe


def summarize(name: str, latencies: list[float], own: float) -> float:
    med = statistics.median(latencies)
    overhead = med - own
    print(f"{name:>18}: round trip median {med * 1000:7.1f} ms (min {min(latencies) * 1000:.1f}, "
          f"max {max(latencies) * 1000:.1f}); overhead {overhead * 1000:7.1f} ms")
    return overhead


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20, help="delegations per run")
    parser.add_argument("--legacy-venv", type=Path, default=Path("/tmp/strawpot-0.1.114-venv"))
    parser.add_argument("--no-legacy", action="store_true", help="measure ours only")
    parser.add_argument("--denden", choices=["unix", "tcp"], default="unix", help="our Denden transport")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, seconds: proves the script still runs")
    args = parser.parse_args()
    if args.smoke:
        args.n = 2
        args.no_legacy = args.no_legacy or not (args.legacy_venv / "bin" / "strawpot").exists()
    agent_python = sys.executable  # has grpcio for the stub agent's Denden client; the same for both
    with tempfile.TemporaryDirectory(prefix="bench-delegation-") as tmp:
        base = Path(tmp)
        # the wrapper's `#!/usr/bin/env python3` finds this interpreter first (not a slow version-manager shim)
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               "STRAWPOT_HOME": str(base / "home")}
        ours_project = build_project(base / "ours", agent_python, args.denden)
        own = agent_own_time(ours_project, agent_python, args.n)
        print(f"no-op agent's own run time: {own * 1000:.1f} ms (median of {args.n})")
        ours_cmd = [sys.executable, "-c", "import sys; from strawpot.cli import main; sys.exit(main())"]
        ours = summarize(f"ours ({args.denden})", run_start(ours_cmd, ours_project, env, args.n), own)
        if args.no_legacy:
            return 0 if ours <= 0.3 or args.smoke else 1
        legacy_project = build_project(base / "legacy", agent_python, legacy=True)
        legacy = summarize("strawpot 0.1.114", run_start([str(legacy_strawpot(args.legacy_venv))], legacy_project,
                                                         env, args.n), own)
        ratio = ours / legacy if legacy > 0 else float("inf")
        print(f"ratio ours/0.1.114: {ratio:.2f} (target: ours <= 300 ms and no slower than 0.1.114)")
        return 0 if (ours <= 0.3 and ours <= legacy) or args.smoke else 1


if __name__ == "__main__":
    raise SystemExit(main())
