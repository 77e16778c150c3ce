"""Check the packages the public StrawPot organisation publishes against this tree: validate, publish, install.

    python scripts/check_real_packages.py [REAL_PACKAGES_DIR] [--if-present]

REAL_PACKAGES_DIR (default: `../shared/real-packages` beside the checkout, or one level further up from a
worktree) holds their markdown: every folder with a SKILL.md, ROLE.md, AGENT.md or INTEGRATION.md is a package.
The check validates each one, copies them to a temp folder and gives those without a version 1.0.0 (in each
repository, a generated `[workspace]` of them and `strawpot version --workspace --set 1.0.0`). It starts a fresh
`strawpot registry serve` (SQLite in a temp folder, free port, a token from `strawpot registry token create`)
and publishes them the way a user publishes many packages: one `strawpot publish DIR...` (dependencies first,
members that depend on each other in one `POST /api/v1/batch`) of the repositories where every dependency can be
met, then `strawpot publish --workspace` in each other repository, which must publish every member but those
whose dependency exists nowhere (and those that need them), hold those back by name and exit 1.
Then it checks that every dependency string the registry stores is in StrawHub's grammar (`slug`,
`slug==X.Y.Z`, `*`), installs every published role into a temp project with `strawpot install --ignore-scripts
--skip-tools` (the roles' default agent fetches its wrapper with `curl … | sh`; the check needs no network), runs
`strawpot verify`, installs and resolves every published role with the real `strawhub` client from this
registry, and starts a real delegating role (`ci-debug-agent`) with the fixture stub agent: it and its
sub-agent must find `denden` on PATH and reach their run with it (the denden skill's `curl … | sh` install is
trusted and run against a stand-in `curl` that builds the fixture client).

A package that needs one missing from the set (or depends on such a package) is expected to be held back, and
listed. Any other failure exits 1. With `--if-present`, a missing REAL_PACKAGES_DIR is not an error (a fresh
clone has no `../shared`).
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
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from real_package_checks import (  # noqa: E402 (beside this script)
    Key,
    Report,
    check_grammar,
    check_integrations,
    delegating_role_finds_denden,
    install_roles,
    last_line,
    strawhub_installs,
    strawpot,
)

from strawpot.model.kinds import Kind  # noqa: E402
from strawpot.model.package import Package, PackageInvalid  # noqa: E402
from strawpot.model.package_folder import load_package  # noqa: E402

DEFAULT_VERSION = "1.0.0"
MAINS = frozenset(kind.main_file for kind in Kind)
_URL_RE = re.compile(r"registry listening on (http://\S+)")


def default_dir() -> Path | None:
    for base in (ROOT.parent, ROOT.parent.parent):
        candidate = base / "shared" / "real-packages"
        if candidate.is_dir():
            return candidate
    return None


def load_all(root: Path, report: Report) -> dict[Key, tuple[Path, Package]]:
    folders = sorted({p.parent for p in root.rglob("*.md") if p.name in MAINS})
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
                deps: dict[Key, list[Key]], report: Report) -> None:
    """One `strawpot publish DIR...` of the repositories with nothing to hold back (what none of the others needs
    first), then `publish --workspace` in each other one (expected: exit 1, exactly the excluded members held
    back), then the rest; what counts as published is the version the registry then holds."""
    from hub_client import HubClient, NotFound

    packages = work / "packages"
    repo_of = {key: folder.relative_to(packages).parts[0] for key, folder in dirs.items()}
    held_repos = sorted({repo_of[key] for key in report.excluded})
    outside = {k for k in dirs if repo_of[k] not in held_repos}
    before = outside - needing({k for k in dirs if repo_of[k] in held_repos}, deps)
    publish_dirs(sorted(before), packages, dirs, env, report)
    for repo in held_repos:
        publish_holding_back(packages / repo, {k: versions[k] for k in dirs if repo_of[k] == repo}, env, report)
    publish_dirs(sorted(outside - before), packages, dirs, env, report)
    with HubClient(url) as client:
        for key, version in versions.items():
            try:
                held = client.package_versions(key[0].value, key[1]).get(version) is not None
            except NotFound:
                held = False
            if held:
                report.published.append(key)
            elif key not in report.refused and key not in report.excluded and not report.publish_failures:
                report.publish_failures.append(f"{key[0].value} {key[1]} {version}: not on the registry after publishing")


def needing(targets: set[Key], deps: dict[Key, list[Key]]) -> set[Key]:
    """The packages that need one of `targets`, directly or through others."""
    found: set[Key] = set()
    changed = True
    while changed:
        changed = False
        for key, needs in deps.items():
            if key not in found and any(d in targets or d in found for d in needs):
                found.add(key)
                changed = True
    return found


def publish_dirs(keys: list[Key], packages: Path, dirs: dict[Key, Path], env: dict[str, str],
                 report: Report) -> None:
    """One `strawpot publish DIR...` of `keys`, which must publish them all."""
    if not keys:
        return
    done = strawpot("publish", "--json", *sorted(str(dirs[k].relative_to(packages)) for k in keys), env=env,
                    cwd=packages)
    if done.returncode != 0:
        report.publish_failures.append(f"strawpot publish DIR... ({len(keys)} packages) exited {done.returncode}: "
                                       f"{done.stdout.strip()[-2000:]} {done.stderr.strip()}")
    else:
        record_batches(json.loads(done.stdout), report)


def record_batches(document: dict[str, object], report: Report) -> None:
    for step in document["steps"]:  # type: ignore[attr-defined]
        if step["action"] == "batch":
            report.batches.append(", ".join(f"{p['kind']} {p['name']} {p['version']}" for p in step["packages"]))


def publish_holding_back(repo: Path, members: dict[Key, str], env: dict[str, str], report: Report) -> None:
    """`strawpot publish --workspace` in `repo` (a `publish DIR...` of its members without a workspace): it must
    exit 1 and hold back exactly the excluded members, naming the dependency each lacks."""
    if (repo / "strawpot.toml").is_file():
        done, how = strawpot("publish", "--workspace", "--json", env=env, cwd=repo), "publish --workspace"
    else:
        rels = sorted({str(p.parent.relative_to(repo)) for p in repo.rglob("*.md") if p.name in MAINS})
        done, how = strawpot("publish", "--json", *rels, env=env, cwd=repo), "publish DIR..."
    where = f"{repo.name}: strawpot {how}"
    try:
        document = json.loads(done.stdout)
    except json.JSONDecodeError:
        report.publish_failures.append(f"{where} exited {done.returncode}: {done.stderr.strip()}")
        return
    if "error" in document:
        report.publish_failures.append(f"{where} exited {done.returncode}: {document['error']['message']}")
        return
    record_batches(document, report)
    labels = {f"{k.value} {n} {v}": (k, n) for (k, n), v in members.items()}
    said: dict[Key, str] = {}
    for entry in document.get("held_back", []):
        said[labels[entry["package"]]] = f"held back: needs {entry['needs']}"
        for dependent in entry["dependents"]:
            said[labels[dependent]] = f"held back: needs {entry['package']}, held back"
        report.held_back.append(f"{where}: held back {entry['package']} (needs {entry['needs']})"
                                + (f", and {', '.join(entry['dependents'])}" if entry["dependents"] else ""))
    expected = {k for k in members if k in report.excluded}
    if set(said) != expected:
        report.publish_failures.append(
            f"{where}: held back {sorted(n for _, n in said) or 'nothing'}, expected {sorted(n for _, n in expected)}")
    if done.returncode != (1 if expected else 0):
        report.publish_failures.append(f"{where} exited {done.returncode}: {last_line(done)}")
    report.refused.update(said)
    published = len(document.get("published", [])) + len(document.get("skipped", []))
    report.held_back.insert(0, f"{where}: {published} published, {len(said)} held back")


def signing_key() -> str:
    """A fresh Ed25519 publisher key, base64, for $STRAWPOT_SIGNING_KEY."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from strawpot.model.provenance import private_b64

    return private_b64(Ed25519PrivateKey.generate())


def run(root: Path) -> Report:
    report = Report()
    packages = load_all(root, report)
    check_integrations((package for _, package in packages.values()), report)
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
            deps = {key: edges(package) for key, (_, package) in packages.items()}
            env["STRAWPOT_SIGNING_KEY"] = signing_key()  # every publish signed, every install checks it (issue 40)
            registered = strawpot("keys", "register", env={**env, "STRAWPOT_TOKEN": token})
            if registered.returncode != 0:
                report.publish_failures.append(f"strawpot keys register exited {registered.returncode}: "
                                               f"{last_line(registered)}")
            publish_all(url, {**env, "STRAWPOT_TOKEN": token}, work, dirs, versions, deps, report)
            check_grammar(url, report)
            roles = sorted(n for k, n in report.published if k is Kind.ROLE)
            install_roles(env, work, roles, report)
            strawhub_installs(url, env, work, roles, report)
            delegating_role_finds_denden(url, {**env, "STRAWPOT_TOKEN": token}, work, versions, report)
    return report


def strawhub_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("strawhub")
    except PackageNotFoundError:
        return "(not installed)"


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
    print(f"  {report.dependency_strings} dependency strings on the registry, "
          f"{report.dependency_strings - len(report.grammar_failures)} in StrawHub's grammar; "
          f"strawhub {strawhub_version()} installed and resolved {report.strawhub_resolved}/{roles} roles")
    for line in report.denden_seen + report.integrations:
        print(f"  {line}")
    for line in report.held_back:
        print(f"  {line}")
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
