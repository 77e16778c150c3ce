"""Check the packages the public StrawPot organisation publishes against this tree: validate, publish, install.

    python scripts/check_real_packages.py [REAL_PACKAGES_DIR] [--if-present]

REAL_PACKAGES_DIR (default: `../shared/real-packages` beside the checkout, or one level further up from a
worktree) holds their markdown: every folder with a SKILL.md, ROLE.md, AGENT.md or INTEGRATION.md is a package.
The check validates each one, copies them to a temp folder and gives those without a version 1.0.0 (in each
repository, a generated `[workspace]` of them and `strawpot version --workspace --set 1.0.0`). It starts a fresh
`strawpot registry serve` (SQLite in a temp folder, free port, a token from `strawpot registry token create`)
and publishes them the way a user publishes many packages: one `strawpot publish DIR...` (dependencies first,
members that depend on each other in one `POST /api/v1/batch`).
Then it installs every published role into a temp project with `strawpot install --ignore-scripts --skip-tools`
(the roles' default agent fetches its wrapper with `curl … | sh`; the check needs no network) and runs
`strawpot verify`.

A package that needs one missing from the set (or depends on such a package) is left out of that publish, as a
user leaves it out, then published alone: its refusal is expected and listed. Any other failure exits 1. With
`--if-present`, a missing REAL_PACKAGES_DIR is not an error (a fresh clone has no `../shared`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

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
    excluded: dict[Key, str] = field(default_factory=dict)  # left out of the publish: why its refusal is expected
    publish_failures: list[str] = field(default_factory=list)
    batches: list[str] = field(default_factory=list)  # the members of each cycle, published in one batch
    roles_installed: int = 0
    install_failures: list[str] = field(default_factory=list)

    @property
    def unexpected(self) -> list[str]:
        out = list(self.invalid) + list(self.publish_failures) + list(self.install_failures)
        out += [f"{k.value} {n}: refused: {why}" for (k, n), why in self.refused.items() if (k, n) not in self.excluded]
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


def last_line(done: subprocess.CompletedProcess[str]) -> str:
    return (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or ["(no output)"])[-1]


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


def exclusions(packages: dict[Key, tuple[Path, Package]]) -> dict[Key, str]:
    """What a user leaves out of the publish, with the reason: a package needing one missing from the set, and
    whatever depends on such a package. Cycles are no reason: they go in one batch."""
    out: dict[Key, str] = {}
    for key, (_, package) in packages.items():
        missing = next((d for d in edges(package) if d not in packages), None)
        if missing is not None:
            out[key] = f"depends on {missing[0].value} {missing[1]}, which is not among the packages"
    changed = True
    while changed:
        changed = False
        for key, (_, package) in packages.items():
            bad = next((d for d in edges(package) if d in out), None) if key not in out else None
            if bad is not None:
                out[key] = f"depends on {bad[0].value} {bad[1]}, which is left out"
                changed = True
    return out


def copy_and_version(root: Path, packages: dict[Key, tuple[Path, Package]], work: Path,
                     env: dict[str, str]) -> dict[Key, Path]:
    """The packages copied under `work` (the original stays untouched); the copied folder of each. In each
    repository (a top folder), those without a version get 1.0.0 as a user gives it: a `[workspace]` of them in
    the repository's strawpot.toml and one `strawpot version --workspace --set 1.0.0`."""
    copy = work / "packages"
    shutil.copytree(root, copy, symlinks=True)
    dirs = {key: copy / folder.relative_to(root) for key, (folder, _) in packages.items()}
    repos: dict[Path, list[str]] = {}
    for folder, package in packages.values():
        if package.version is None:
            rel = folder.relative_to(root)
            repos.setdefault(copy / rel.parts[0], []).append(PurePosixPath(*rel.parts[1:]).as_posix())
    for repo, members in sorted(repos.items()):
        manifest = repo / "strawpot.toml"
        if manifest.exists() or "." in members:
            raise SystemExit(f"error: {repo.relative_to(copy)}: cannot make it a workspace (it has a strawpot.toml "
                             "or is a package itself); the check needs a new shape of repository")
        manifest.write_text("[workspace]\nmembers = [" + ", ".join(f'"{m}"' for m in sorted(members)) + "]\n",
                            encoding="utf-8")
        done = strawpot("version", "--workspace", "--set", DEFAULT_VERSION, env=env, cwd=repo)
        if done.returncode != 0:
            raise SystemExit(f"error: {repo.relative_to(copy)}: `strawpot version --workspace --set "
                             f"{DEFAULT_VERSION}` exited {done.returncode}: {done.stderr.strip()}")
    return dirs


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


def publish_all(url: str, env: dict[str, str], work: Path, dirs: dict[Key, Path], versions: dict[Key, str],
                report: Report) -> None:
    """One `strawpot publish DIR...` of everything not excluded, then each excluded package alone (expected to
    be refused); what counts as published is the version the registry then holds."""
    from hub_client import HubClient, NotFound

    chosen = sorted(str(d.relative_to(work / "packages")) for k, d in dirs.items() if k not in report.excluded)
    done = strawpot("publish", "--json", *chosen, env=env, cwd=work / "packages")
    if done.returncode != 0:
        report.publish_failures.append(f"strawpot publish DIR... exited {done.returncode}: {done.stderr.strip()}")
    else:
        for step in json.loads(done.stdout)["steps"]:
            if step["action"] == "batch":
                report.batches.append(", ".join(f"{p['kind']} {p['name']} {p['version']}" for p in step["packages"]))
    for key in sorted(report.excluded, key=lambda k: (k[0].value, k[1])):
        alone = strawpot("publish", str(dirs[key]), env=env, cwd=work / "packages")
        if alone.returncode != 0:
            report.refused[key] = " ".join(alone.stderr.split())
    with HubClient(url) as client:
        for key, version in versions.items():
            try:
                held = client.package_versions(key[0].value, key[1]).get(version) is not None
            except NotFound:
                held = False
            if held:
                report.published.append(key)
            elif key not in report.refused and done.returncode == 0:  # else the publish's error names them
                report.publish_failures.append(f"{key[0].value} {key[1]} {version}: not on the registry after publishing")


def install_roles(env: dict[str, str], work: Path, roles: list[str], report: Report) -> None:
    """Every published role into one temp project (then, if that fails, each alone to name the culprits)."""
    def install(project: Path, names: list[str]) -> subprocess.CompletedProcess[str]:
        project.mkdir(parents=True)
        args = [a for name in names for a in ("role", name)]
        return strawpot("install", *args, "--ignore-scripts", "--skip-tools", env=env, cwd=project)

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
            report.install_failures.append(f"role {name}: install exited {alone.returncode}: {last_line(alone)}")


def run(root: Path) -> Report:
    report = Report()
    packages = load_all(root, report)
    report.excluded = exclusions(packages)
    with tempfile.TemporaryDirectory(prefix="strawpot-real-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "STRAWPOT_CACHE_DIR": str(work / "cache"), "STRAWPOT_CONFIG_DIR": str(work / "config"),
               "STRAWPOT_HOME": str(work / "home"), "NO_COLOR": "1", "COLUMNS": "200"}
        for name in ("STRAWPOT_REGISTRY_URL", "STRAWPOT_TOKEN", "STRAWPOT_TOKEN_REGISTRY"):
            env.pop(name, None)
        dirs = copy_and_version(root, packages, work, env)
        with registry(work, env) as (url, token):
            env["STRAWPOT_REGISTRY_URL"] = url
            versions = {key: str(package.version or DEFAULT_VERSION) for key, (_, package) in packages.items()}
            publish_all(url, {**env, "STRAWPOT_TOKEN": token}, work, dirs, versions, report)
            roles = sorted(n for k, n in report.published if k is Kind.ROLE)
            install_roles(env, work, roles, report)
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
    for batch in report.batches:
        print(f"  published together in one batch (a dependency cycle): {batch}")
    for (kind, name), why in sorted(report.refused.items(), key=lambda item: (item[0][0].value, item[0][1])):
        expected = report.excluded.get((kind, name))
        label = f"expected ({expected})" if expected else "UNEXPECTED"
        print(f"  refused {kind.value} {name}: {label}: {why}")
    for (kind, name), why in sorted(report.excluded.items(), key=lambda item: (item[0][0].value, item[0][1])):
        if (kind, name) in report.published:
            print(f"  note: {kind.value} {name} was published although it {why}")
    for problem in report.unexpected:
        print(f"  FAILED {problem}")
    return 1 if report.unexpected else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
