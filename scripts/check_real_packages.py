"""Check the packages the public StrawPot organisation publishes against this tree: validate, publish, install.

    python scripts/check_real_packages.py [REAL_PACKAGES_DIR] [--if-present]

REAL_PACKAGES_DIR (default: `../shared/real-packages` beside the checkout, or one level further up from a
worktree) holds their markdown: every folder with a SKILL.md, ROLE.md, AGENT.md or INTEGRATION.md is a package.
The check validates each one, starts a fresh `strawpot registry serve` (SQLite in a temp folder, free port, a
token from `strawpot registry token create`), publishes them all in dependency order (those without a version as
1.0.0), then installs every published role into a temp project with `strawpot install --ignore-scripts
--skip-tools` (the roles' default agent fetches its wrapper with `curl … | sh`; the check needs no network).

A package that depends on one missing from the set, or sits in (or depends on) a dependency cycle, cannot be
published one at a time; its refusal is expected and listed. Any other failure exits 1. With `--if-present`, a
missing REAL_PACKAGES_DIR is not an error (a fresh clone has no `../shared`).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from strawpot.model.kinds import Kind  # noqa: E402
from strawpot.model.package import Package, PackageInvalid  # noqa: E402
from strawpot.model.package_folder import load_package  # noqa: E402

DEFAULT_VERSION = "1.0.0"
_URL_RE = re.compile(r"registry listening on (http://\S+)")
Key = tuple[Kind, str]


@dataclass
class Report:
    validated: int = 0
    invalid: list[str] = field(default_factory=list)
    published: list[Key] = field(default_factory=list)
    refused: dict[Key, str] = field(default_factory=dict)
    blocked: dict[Key, str] = field(default_factory=dict)  # why a refusal is expected
    roles_installed: int = 0
    install_failures: list[str] = field(default_factory=list)

    @property
    def unexpected(self) -> list[str]:
        out = list(self.invalid) + list(self.install_failures)
        out += [f"{k.value} {n}: refused: {why}" for (k, n), why in self.refused.items() if (k, n) not in self.blocked]
        return out


def default_dir() -> Path | None:
    for base in (ROOT.parent, ROOT.parent.parent):
        candidate = base / "shared" / "real-packages"
        if candidate.is_dir():
            return candidate
    return None


def strawpot(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "strawpot.cli", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def load_all(root: Path, report: Report) -> dict[Key, tuple[Path, Package]]:
    mains = {kind.main_file for kind in Kind}
    folders = sorted({p.parent for p in root.rglob("*.md") if p.name in mains})
    found: dict[Key, tuple[Path, Package]] = {}
    for folder in folders:
        try:
            package = load_package(folder)
        except PackageInvalid as exc:
            report.invalid.append(f"{folder}: invalid: {exc}")
            continue
        report.validated += 1
        found[(package.kind, package.name)] = (folder, package)
    return found


def edges(package: Package) -> list[Key]:
    out = [(d.kind, d.name) for d in package.dependencies]
    if package.default_agent:
        out.append((Kind.AGENT, package.default_agent))
    return out


def publish_order(packages: dict[Key, tuple[Path, Package]], report: Report) -> list[Key]:
    """Every package after what it depends on; those that cannot come after (a dependency missing from the set,
    a cycle) are marked blocked, with the reason, and placed last."""
    order: list[Key] = []
    state: dict[Key, str] = {}

    def visit(key: Key, path: list[Key]) -> None:
        if state.get(key) == "done":
            return
        if state.get(key) == "open":
            cycle = path[path.index(key):]
            for member in cycle:
                report.blocked.setdefault(member, "in the dependency cycle " + " -> ".join(n for _, n in [*cycle, key]))
            return
        state[key] = "open"
        for dep in edges(packages[key][1]):
            if dep not in packages:
                report.blocked.setdefault(key, f"depends on {dep[0].value} {dep[1]}, which is not among the packages")
            else:
                visit(dep, [*path, key])
        state[key] = "done"
        order.append(key)

    for key in sorted(packages, key=lambda k: (k[0] is not Kind.AGENT, k[0].value, k[1])):
        visit(key, [])
    changed = True
    while changed:  # what depends on a blocked package is blocked too
        changed = False
        for key in order:
            if key not in report.blocked:
                bad = next((d for d in edges(packages[key][1]) if d in report.blocked), None)
                if bad is not None:
                    report.blocked[key] = f"depends on {bad[0].value} {bad[1]}, which cannot be published first"
                    changed = True
    return [k for k in order if k not in report.blocked] + [k for k in order if k in report.blocked]


@contextmanager
def registry(work: Path, env: dict[str, str]) -> Iterator[tuple[str, str]]:
    """A fresh embedded registry on a free loopback port: (url, admin token)."""
    data = work / "registry"
    token = strawpot("registry", "token", "create", "--user", "ci", "--admin", "--data", str(data), env=env)
    if token.returncode != 0:
        raise SystemExit(f"error: could not create a registry token: {token.stderr.strip()}")
    log_path = work / "registry.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "strawpot.cli", "registry", "serve", "--host", "127.0.0.1", "--port", "0",
             "--data", str(data), "--rate-limit", "0"],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, env={**env, "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.monotonic() + 60
        while not (match := _URL_RE.search(log_path.read_text(errors="replace"))):
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"error: the registry did not start:\n{log_path.read_text(errors='replace')}")
            time.sleep(0.05)
        yield match.group(1), token.stdout.strip().splitlines()[-1]
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def publish_all(url: str, token: str, packages: dict[Key, tuple[Path, Package]], order: list[Key],
                report: Report) -> None:
    from hub_client import HubClient, HubError
    from strawpot.model.errors import StrawpotError
    from strawpot.publishing.prepare import prepare_upload

    with HubClient(url, token=token) as client:
        for key in order:
            folder, package = packages[key]
            try:
                upload = prepare_upload(folder, version=None if package.version else DEFAULT_VERSION)
                client.publish(upload.kind.value, upload.fields, [(f.path, f.data) for f in upload.files])
            except (HubError, StrawpotError) as exc:
                report.refused[key] = " ".join(str(exc).split())
            else:
                report.published.append(key)


def install_roles(url: str, env: dict[str, str], work: Path, roles: list[str], report: Report) -> None:
    """Every published role into one temp project (then, if that fails, each alone to name the culprits)."""
    def install(project: Path, names: list[str]) -> subprocess.CompletedProcess[str]:
        project.mkdir(parents=True)
        args = [a for name in names for a in ("role", name)]
        return strawpot("install", *args, "--ignore-scripts", "--skip-tools", "--registry", url,
                        env=env, cwd=project)

    project = work / "project"
    done = install(project, roles)
    if done.returncode == 0:
        verified = strawpot("verify", env=env, cwd=project)
        if verified.returncode != 0:
            report.install_failures.append(f"verify after installing every role: {verified.stdout}{verified.stderr}")
        report.roles_installed = sum(1 for name in roles if (project / ".strawpot" / "roles" / name / "ROLE.md").is_file())
        missing = [name for name in roles if not (project / ".strawpot" / "roles" / name / "ROLE.md").is_file()]
        report.install_failures += [f"role {name}: not in .strawpot/roles after install" for name in missing]
        return
    for name in roles:
        alone = install(work / "projects" / name, [name])
        if alone.returncode == 0:
            report.roles_installed += 1
        else:
            last = (alone.stderr.strip().splitlines() or ["(no output)"])[-1]
            report.install_failures.append(f"role {name}: install exited {alone.returncode}: {last}")


def run(root: Path) -> Report:
    report = Report()
    packages = load_all(root, report)
    order = publish_order(packages, report)
    with tempfile.TemporaryDirectory(prefix="strawpot-real-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "STRAWPOT_CACHE_DIR": str(work / "cache"), "STRAWPOT_CONFIG_DIR": str(work / "config"),
               "STRAWPOT_HOME": str(work / "home"), "NO_COLOR": "1", "COLUMNS": "200"}
        for name in ("STRAWPOT_REGISTRY_URL", "STRAWPOT_TOKEN"):
            env.pop(name, None)
        with registry(work, env) as (url, token):
            publish_all(url, token, packages, order, report)
            roles = sorted(n for k, n in report.published if k is Kind.ROLE)
            install_roles(url, env, work, roles, report)
    return report


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", nargs="?", type=Path, help="the real-packages folder")
    parser.add_argument("--if-present", action="store_true", help="exit 0 when the folder does not exist")
    args = parser.parse_args(argv)
    root = args.packages or default_dir()
    if root is None or not root.is_dir():
        if args.if_present:
            print("real packages: not present here, nothing to check", file=sys.stderr)
            return 0
        print(f"error: {root or '../shared/real-packages'} does not exist; pass the real-packages folder", file=sys.stderr)
        return 2
    started = time.monotonic()
    report = run(root)
    total = report.validated + len(report.invalid)
    roles = sum(1 for k, _ in report.published if k is Kind.ROLE)
    print(f"real packages in {root}: {report.validated}/{total} validated, {len(report.published)} published, "
          f"{len(report.refused)} refused, {report.roles_installed}/{roles} published roles installed "
          f"({time.monotonic() - started:.1f}s)")
    for (kind, name), why in sorted(report.refused.items(), key=lambda item: (item[0][0].value, item[0][1])):
        expected = report.blocked.get((kind, name))
        label = f"expected ({expected})" if expected else "UNEXPECTED"
        print(f"  refused {kind.value} {name}: {label}: {why}")
    for (kind, name), why in sorted(report.blocked.items(), key=lambda item: (item[0][0].value, item[0][1])):
        if (kind, name) in report.published:
            print(f"  note: {kind.value} {name} was published although it {why}")
    for problem in report.unexpected:
        print(f"  FAILED {problem}")
    return 1 if report.unexpected else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
