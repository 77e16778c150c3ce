"""The checks of scripts/check_real_packages.py after publishing: the registry's dependency strings, installs by
strawpot and by the real strawhub client, a delegating run; and the report they fill."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from strawpot.model.dependencies import published_form_problems
from strawpot.model.kinds import Kind
from strawpot.model.package import Package

ROOT = Path(__file__).resolve().parents[1]
DELEGATING_ROLE = "ci-debug-agent"  # a real role that delegates without listing the denden skill
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
    held_back: list[str] = field(default_factory=list)  # what `publish --workspace` said it held back, and where
    dependency_strings: int = 0  # dependency entries read back from the registry, each in StrawHub's grammar
    grammar_failures: list[str] = field(default_factory=list)
    strawhub_resolved: int = 0
    strawhub_failures: list[str] = field(default_factory=list)
    denden_seen: list[str] = field(default_factory=list)  # what each agent of the delegating run got from `denden`
    denden_failures: list[str] = field(default_factory=list)
    integrations: list[str] = field(default_factory=list)  # each chat integration's entry point and required env
    integration_failures: list[str] = field(default_factory=list)

    @property
    def unexpected(self) -> list[str]:
        out = list(self.invalid) + list(self.publish_failures) + list(self.install_failures)
        out += self.grammar_failures + self.strawhub_failures + self.denden_failures + self.integration_failures
        out += [f"{k.value} {n}: refused: {why}" for (k, n), why in self.refused.items() if (k, n) not in self.excluded]
        return out


BOT_TOKEN = "STRAWPOT_BOT_TOKEN"  # what every real chat adapter needs to reach its chat service


def check_integrations(packages: Iterable[Package], report: Report) -> None:
    """Every integration parses (it did, to be here) with an entry point to run and a required STRAWPOT_BOT_TOKEN:
    what `strawpot ui` starts it with, and what it refuses to start it without."""
    for package in packages:
        if package.kind is not Kind.INTEGRATION:
            continue
        required = sorted(name for name, spec in package.env.items() if spec.required)
        line = f"integration {package.name}: entry point {' '.join(package.entry_point)!r}, requires {required}"
        report.integrations.append(line)
        if not package.entry_point or BOT_TOKEN not in required:
            report.integration_failures.append(f"{line}: expected an entry point and a required {BOT_TOKEN}")


def strawpot(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "strawpot.cli", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def last_line(done: subprocess.CompletedProcess[str]) -> str:
    return (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or ["(no output)"])[-1]


def check_grammar(url: str, report: Report) -> None:
    """Every dependency string of every published version, read back from the registry, in StrawHub's grammar."""
    import httpx

    with httpx.Client(base_url=url, timeout=60) as client:
        for kind, name in report.published:
            for version in client.get(f"/api/v1/{kind.plural}/{name}/versions").json()["versions"]:
                groups = version.get("dependencies") or {}
                report.dependency_strings += sum(len(v) for v in groups.values() if isinstance(v, list))
                report.grammar_failures += [
                    f"{kind.value} {name} {version['version']}: dependencies.{bad.group}[{bad.index}]: {bad.message}"
                    for bad in published_form_problems(kind, groups)]


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
        lock = (project / "strawpot.lock").read_text()
        unsigned = lock.count("[[package]]") - lock.count("signer = { key = ")
        if unsigned:
            report.install_failures.append(f"{unsigned} locked packages have no checked signer in strawpot.lock")
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


def strawhub_installs(url: str, env: dict[str, str], work: Path, roles: list[str], report: Report) -> None:
    """Each published role installed and resolved by the real `strawhub` client (PyPI `strawhub`), from this
    registry, into one strawhub root: it reads every dependency string we published."""
    program = shutil.which("strawhub", path=str(Path(sys.executable).parent)) or shutil.which("strawhub")
    if program is None:
        report.strawhub_failures.append("strawhub is not installed (it is a test dependency: pip install strawhub)")
        return
    root = work / "strawhub-root"
    root.mkdir()
    hub_env = {**env, "STRAWHUB_API_URL": url, "HOME": str(work / "strawhub-home")}
    for name in roles:
        for args in (("install", "role", name, "--skip-tools"), ("resolve", "role", name)):
            done = subprocess.run([program, "--root", str(root), *args], env=hub_env, capture_output=True, text=True,
                                  timeout=300, stdin=subprocess.DEVNULL)
            if done.returncode != 0:
                report.strawhub_failures.append(f"strawhub {' '.join(args[:2])} {name} exited {done.returncode}: "
                                                f"{last_line(done)}")
                break
        else:
            report.strawhub_resolved += 1


STAND_IN_CURL = """#!/bin/sh
# A stand-in for `curl -fsSL …/denden/install.sh`: prints an install script that builds the fixture client.
cat <<'SCRIPT'
set -eu
cp -R "{fixture}/client" "$INSTALL_DIR/client"
cp "{fixture}/denden" "$INSTALL_DIR/denden"
chmod 755 "$INSTALL_DIR/denden"
SCRIPT
"""


def delegating_role_finds_denden(url: str, env: dict[str, str], work: Path, versions: dict[Key, str],
                                 report: Report) -> None:
    """`strawpot start --role ci-debug-agent` (a real role that delegates but lists no denden) with the fixture
    stub agent: the agent and its sub-agent each run `denden status` from PATH and reach their run."""
    wanted = {(Kind.ROLE, DELEGATING_ROLE), (Kind.SKILL, "denden")}
    if not wanted <= set(report.published):
        if wanted <= set(versions):
            report.denden_failures.append(f"role {DELEGATING_ROLE} or skill denden was not published")
        else:
            report.denden_seen.append(f"no role {DELEGATING_ROLE} and skill denden here: no delegating run started")
        return
    published = strawpot("publish", str(ROOT / "fixtures" / "agents" / "stub-agent"), env=env)
    if published.returncode != 0:
        report.denden_failures.append(f"publishing the fixture stub-agent: {last_line(published)}")
        return
    tools = work / "stand-ins"
    tools.mkdir()
    (tools / "curl").write_text(STAND_IN_CURL.replace("{fixture}", str(ROOT / "fixtures" / "skills" / "denden")))
    (tools / "curl").chmod(0o755)
    project = work / "delegating"
    project.mkdir()
    (project / "strawpot.toml").write_text(
        f'[skills]\ndenden = "*"\n\n[roles]\n{DELEGATING_ROLE} = "*"\n\n[agents]\n'
        f'stub-agent = {{ version = "*", python = {json.dumps(sys.executable)} }}\n', encoding="utf-8")
    run_env = {k: v for k, v in env.items() if k != "STRAWPOT_TOKEN"}
    run_env["PATH"] = os.pathsep.join([str(tools), str(Path(sys.executable).parent), env.get("PATH", "")])
    steps = [("install", "--skip-tools"), ("trust", "skill:denden")]
    for args in steps:
        done = strawpot(*args, env=run_env, cwd=project)
        if done.returncode != 0:
            report.denden_failures.append(f"strawpot {' '.join(args)}: exited {done.returncode}: {last_line(done)}")
            return
    lock = (project / "strawpot.lock").read_text(encoding="utf-8")
    roles = sorted(set(re.findall(r'kind = "role"\nname = "([a-z0-9-]+)"', lock)))
    for role in roles:  # every role of the run played by the stub agent, not its default (a remote install)
        run_env["STRAWPOT_AGENT_" + role.upper().replace("-", "_")] = "stub-agent"
    done = strawpot("start", "--headless", "--role", DELEGATING_ROLE, "--task",
                    "run:denden then delegate:implementer:run:denden", env=run_env, cwd=project)
    lines = done.stdout.splitlines()
    try:
        statuses = [json.loads(line) for line in lines]
    except json.JSONDecodeError:
        statuses = []
    if done.returncode != 0 or [s.get("activeAgents") for s in statuses] != [1, 2]:
        report.denden_failures.append(f"start --role {DELEGATING_ROLE}: exited {done.returncode}, the agents said "
                                      f"{lines!r}: {last_line(done)}")
        return
    report.denden_seen = [f"{role}: denden status {line}" for role, line in zip(
        (DELEGATING_ROLE, "implementer"), lines, strict=True)]
