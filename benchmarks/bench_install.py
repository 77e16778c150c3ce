"""Cold install of a role with 100 transitive packages: `strawpot install` vs `strawhub install` 0.1.54.

Both run as subprocesses against one live `strawpot registry serve` in the same run, taking turns, with an
empty cache and an empty project, twice: on bare loopback, and through a loopback proxy (tests/_proxy.py)
that adds a fixed delay (50 ms by default) to every request.

The repository's packages are byte-compiled first, as installing a wheel does: strawhub runs from
the .pyc files in site-packages, and with PYTHONDONTWRITEBYTECODE set (as in some sandboxes) an
editable checkout would otherwise recompile every strawpot module on every run (~0.1 s).

With `--baseline DIR`, a second strawpot checkout (its `.venv`, e.g. the commit before a change) takes its
turn too, so before and after are measured in one run on one machine; the ratio is taken pair by pair.

    .venv/bin/python benchmarks/bench_install.py [--packages 100] [--delay-ms 50] [--repeat 3] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests._live_registry import start_registry  # noqa: E402
from tests._proxy import LoopbackProxy  # noqa: E402

BIN = Path(sys.executable).parent


def publish_graph(url: str, token: str, workdir: Path, total: int, *, signed: bool = False) -> str:
    """A role whose closure is `total` packages: role → 10 skills → the rest spread under them.

    Dependencies are plain slugs so strawhub 0.1.54 can resolve them too; `signed`: each publish carries a
    statement signed by a key registered first (installs then check every signature and inclusion proof).
    Returns the role's slug.
    """
    from hub_client import HubClient
    from strawpot.publishing.prepare import prepare_upload

    skills = [f"bench-skill-{i:03d}" for i in range(total - 1)]
    top, rest = skills[:10], skills[10:]
    children: dict[str, list[str]] = {s: [] for s in skills}
    for i, slug in enumerate(rest):
        children[top[i % len(top)]].append(slug)
    order = rest + top  # leaves first: publishing checks that dependencies exist
    with HubClient(url, token=token) as client:
        if signed:
            client = _Signing(client, client.whoami()["handle"], workdir)
        for slug in order:
            deps = "".join(f"\n        - {d}" for d in children[slug])
            meta = f"\nmetadata:\n  strawpot:\n    dependencies:{deps}" if deps else ""
            _publish(client, prepare_upload, workdir / slug, "SKILL.md", (
                f"---\nname: {slug}\ndescription: benchmark skill {slug}\nversion: 1.0.0{meta}\n---\n"
                f"# {slug}\n\n" + "Some guidance for the agent. " * 40 + "\n"
            ), {"reference.md": ("Reference material. " * 60 + "\n").encode()})
        role_deps = "".join(f"\n        - {s}" for s in top)
        _publish(client, prepare_upload, workdir / "bench-role", "ROLE.md", (
            f"---\nname: bench-role\ndescription: benchmark role\nversion: 1.0.0\nmetadata:\n  strawpot:\n"
            f"    dependencies:\n      skills:{role_deps}\n---\n# bench-role\n"
        ), {})
    return "bench-role"


class _Signing:
    """A client whose publishes are signed with a key it generates and registers (`--signed`)."""

    def __init__(self, client, handle: str, workdir: Path) -> None:  # noqa: ANN001
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        from strawpot.model.provenance import public_b64

        self.client, self.handle, self.workdir = client, handle, workdir
        self.key = Ed25519PrivateKey.generate()
        client.register_key(public_b64(self.key))

    def publish(self, kind: str, fields: dict[str, str], files: list[tuple[str, bytes]]) -> object:
        return self.client.publish(kind, fields, files)

    def sign(self, upload) -> None:  # noqa: ANN001
        from strawpot.publishing.keys import sign_upload

        upload.fields.update(sign_upload(self.key, upload, self.handle, self.workdir))


def _publish(client, prepare_upload, folder: Path, main: str, text: str, extra: dict[str, bytes]) -> None:  # noqa: ANN001
    folder.mkdir(parents=True)
    (folder / main).write_text(text, encoding="utf-8")
    for name, data in extra.items():
        (folder / name).write_bytes(data)
    upload = prepare_upload(folder)
    if isinstance(client, _Signing):
        client.sign(upload)
    client.publish(upload.kind.value, upload.fields, [(f.path, f.data) for f in upload.files])


def compile_sources(checkout: Path = REPO) -> None:
    import compileall

    for package in ("strawpot", "hub_client", "resolver", "registry_server", "orchestrator", "valueclass"):
        if (checkout / package).is_dir():  # a baseline checkout may predate a package
            compileall.compile_dir(checkout / package, quiet=1)


def strawpot_program(checkout: Path | None) -> list[str]:
    """The `strawpot` program of a checkout (its `.venv`), or of the interpreter running this script (None)."""
    if checkout is None:
        return [str(BIN / "strawpot")]
    script = checkout / ".venv" / "bin" / "strawpot"
    if script.exists():
        return [str(script)]
    python = checkout / ".venv" / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"--baseline {checkout}: no .venv/bin/strawpot or .venv/bin/python (run scripts/bootstrap.sh there)")
    return [str(python), "-m", "strawpot.cli"]


def paired_ratio(slow: list[float], fast: list[float]) -> float:
    """The median of slow/fast over runs that took turns: steadier than a ratio of medians on a busy machine."""
    return statistics.median(s / f for s, f in zip(slow, fast, strict=True))


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return elapsed


def count_installed(project: Path) -> int:
    root = project / ".strawpot"
    return sum(1 for kind in ("skills", "roles") if (root / kind).is_dir()
               for p in (root / kind).iterdir() if (p / ".version").is_file())


def run_once(tool: str, url: str, role: str, scratch: Path, expected: int, program: list[str] | None = None) -> float:
    """One cold install by `tool` ("strawhub", or a strawpot `program`) into an empty project and cache."""
    project = Path(tempfile.mkdtemp(prefix=f"{tool}-proj-", dir=scratch))
    home = Path(tempfile.mkdtemp(prefix=f"{tool}-home-", dir=scratch))
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"),
           "XDG_CACHE_HOME": str(home / "cache"), "STRAWPOT_HOME": str(home / "global")}
    if tool != "strawhub":
        env.update(STRAWPOT_REGISTRY_URL=url, STRAWPOT_CACHE_DIR=str(home / "sp-cache"),
                   STRAWPOT_CONFIG_DIR=str(home / "sp-config"))
        cmd = [*(program or strawpot_program(None)), "install", "role", role, "--skip-tools"]
    else:
        env.update(STRAWHUB_API_URL=url)
        cmd = [str(BIN / "strawhub"), "install", "role", role, "--skip-tools"]
    elapsed = timed(cmd, project, env)
    found = count_installed(project)
    if found != expected:
        raise SystemExit(f"{tool} installed {found} packages, expected {expected}")
    shutil.rmtree(project)
    shutil.rmtree(home)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--packages", type=int, default=100, help="packages in the role's closure (with the role)")
    parser.add_argument("--delay-ms", type=float, default=50.0, help="latency the proxy adds to every request")
    parser.add_argument("--repeat", type=int, default=3, help="runs per tool and setting (the median is shown)")
    parser.add_argument("--signed", action="store_true",
                        help="publish every package signed (issue 40): installs check each signature and proof")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, seconds: proves the script still runs")
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="another strawpot checkout with its own .venv, run in turn with this one (before/after)")
    args = parser.parse_args()
    if args.smoke:
        args.packages, args.delay_ms, args.repeat = 3, 5.0, 1
    programs = {"strawpot": strawpot_program(None)}
    if args.baseline is not None:
        programs["baseline"] = strawpot_program(args.baseline.resolve())
        compile_sources(args.baseline.resolve())
    tools = [*programs] + (["strawhub"] if not args.smoke or (BIN / "strawhub").exists() else [])
    compile_sources()

    with tempfile.TemporaryDirectory(prefix="bench-install-") as tmp:
        scratch = Path(tmp)
        (scratch / "registry").mkdir()
        with start_registry(scratch / "registry") as live:
            t0 = time.perf_counter()
            role = publish_graph(live.url, live.token, scratch / "packages", args.packages, signed=args.signed)
            print(f"published {args.packages} packages to {live.url} in {time.perf_counter() - t0:.1f}s")
            results: dict[str, dict[str, list[float]]] = {}
            with LoopbackProxy(live.url, delay=args.delay_ms / 1000) as proxy:
                for label, url in (("loopback", live.url), (f"+{args.delay_ms:g} ms", proxy.url)):
                    # the tools take turns, so a machine that speeds up or slows down mid-run moves both alike
                    runs: dict[str, list[float]] = {tool: [] for tool in tools}
                    for _ in range(args.repeat):
                        for tool, times in runs.items():
                            times.append(run_once(tool, url, role, scratch, args.packages, programs.get(tool)))
                    for tool, times in runs.items():
                        print(f"  {label:>10}  {tool:<9} " + "  ".join(f"{r:6.2f}s" for r in times), flush=True)
                    results[label] = runs
    print(f"\ncold install of a role with {args.packages} packages (median of {args.repeat}; x: paired ratio):")
    for label, runs in results.items():
        line = f"  {label:>10}: " + "   ".join(f"{tool} {statistics.median(times):6.2f}s" for tool, times in runs.items())
        if "strawhub" in runs:
            line += f"   strawhub/strawpot {paired_ratio(runs['strawhub'], runs['strawpot']):5.1f}x"
            if "baseline" in runs:
                line += f"   strawhub/baseline {paired_ratio(runs['strawhub'], runs['baseline']):5.1f}x"
        else:
            line += "   (strawhub not installed)"
        if "baseline" in runs:
            line += f"   baseline/strawpot {paired_ratio(runs['baseline'], runs['strawpot']):5.2f}x"
        print(line)


if __name__ == "__main__":
    main()
