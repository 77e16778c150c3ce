"""scripts/check_real_packages.py on a small tree in the real packages' shapes (no ../shared needed): unversioned
packages given 1.0.0 (a versioned one keeps its own) and published with one `strawpot publish DIR...`, a role
cycle and what depends on it published (one batch), a role needing a missing package left out and listed as an
expected refusal, every published role installed without running the agent's remote install script."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "check_real_packages.py"
AGENT = """---
name: remote-agent
description: A wrapper fetched by a remote script
metadata:
  version: "0.1.0"
  strawpot:
    bin: {macos: remote_agent, linux: remote_agent}
    install:
      macos: curl -fsSL https://downloads.fixture.invalid/remote-agent/install.sh | sh
      linux: curl -fsSL https://downloads.fixture.invalid/remote-agent/install.sh | sh
---
"""
TOOL_SKILL = """---
name: tool-skill
description: A skill that carries a program
metadata:
  version: "2.3.0"
  strawpot:
    bin: {macos: tool, linux: tool, windows: tool.exe}
    install:
      macos: curl -fsSL https://downloads.fixture.invalid/tool/install.sh | sh
      linux: curl -fsSL https://downloads.fixture.invalid/tool/install.sh | sh
---
"""


DENDEN = """---
name: denden
description: Talk to the orchestrator
metadata:
  strawpot:
    bin: {macos: denden, linux: denden, windows: denden.exe}
    install:
      macos: curl -fsSL https://downloads.fixture.invalid/denden/install.sh | sh
      linux: curl -fsSL https://downloads.fixture.invalid/denden/install.sh | sh
---
"""


def role(name: str, *, skills: tuple[str, ...] = (), roles: tuple[str, ...] = ()) -> str:
    deps = "".join(f"\n        - \"{s}\"" for s in skills) or " []"
    role_deps = "".join(f"\n        - \"{r}\"" for r in roles) or " []"
    return (f"---\nname: {name}\ndescription: Role {name}\nmetadata:\n  strawpot:\n    default_agent: remote-agent\n"
            f"    dependencies:\n      skills:{deps}\n      roles:{role_deps}\n---\n# {name}\n")


def write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")


def tree(root: Path) -> Path:
    write(root, "agents/remote-agent/AGENT.md", AGENT)
    write(root, "skills/tool-skill/SKILL.md", TOOL_SKILL)
    write(root, "skills/base/SKILL.md", "---\nname: base\ndescription: Base skill\n---\n")
    write(root, "skills/base/references/more.md", "# more\n")
    write(root, "skills/uses-base/SKILL.md", "---\nname: uses-base\ndescription: d\nmetadata:\n  strawpot:\n"
                                              "    dependencies:\n      - base\n      - tool-skill\n---\n")
    write(root, "roles/writer/ROLE.md", role("writer", skills=("uses-base",)))
    write(root, "roles/lead/ROLE.md", role("lead", skills=("*",), roles=("writer", "*")))
    write(root, "roles/marketer/ROLE.md", role("marketer", skills=("missing-api",)))
    write(root, "roles/ci-debug-agent/ROLE.md", role("ci-debug-agent", roles=("implementer",)))
    write(root, "roles/implementer/ROLE.md", role("implementer", skills=("base",)))
    write(root, "denden/denden/SKILL.md", DENDEN)
    write(root, "set/roles/ping/ROLE.md", role("ping", roles=("pong",)))
    write(root, "set/roles/pong/ROLE.md", role("pong", roles=("ping",)))
    write(root, "set/roles/boss/ROLE.md", role("boss", roles=("ping",)))
    return root


def check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True, timeout=300)


def test_the_check_publishes_the_cycle_lists_the_expected_refusal_and_installs_every_role(tmp_path: Path) -> None:
    done = check(tree(tmp_path / "real"))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    # 12 published: ping <-> pong (a cycle) and boss (needs ping) too; tool-skill only as its own 2.3.0
    assert lines[0].startswith(f"real packages in {tmp_path / 'real'}: 13/13 validated, 12 published, 1 refused, "
                               "7/7 published roles installed ("), done.stdout
    assert lines[1:] == [
        "  9 dependency strings on the registry, 9 in StrawHub's grammar; strawhub 0.1.54 installed and resolved "
        "7/7 roles",
        *lines[2:4],
        "  roles: strawpot publish --workspace: 4 published, 1 held back",
        "  roles: strawpot publish --workspace: held back role marketer 1.0.0 (needs skill missing-api, which is "
        "neither on the registry nor among these packages)",
        "  published together in one batch (a dependency cycle): role ping 1.0.0, role pong 1.0.0",
        "  refused role marketer: expected (depends on skill missing-api, which is not among the packages): held "
        "back: needs skill missing-api, which is neither on the registry nor among these packages",
    ], done.stdout
    # the delegating role and its sub-agent ran `denden` from PATH (the trusted curl | sh, a stand-in curl) and
    # reached their own run
    assert re.fullmatch(r'  ci-debug-agent: denden status \{("uptimeSeconds": "\d+", )?"activeAgents": 1\}', lines[2])
    assert re.fullmatch(r'  implementer: denden status \{("uptimeSeconds": "\d+", )?"activeAgents": 2\}', lines[3])
    assert "version: \"2.3.0\"" in (tmp_path / "real" / "skills" / "tool-skill" / "SKILL.md").read_text()
    assert "version" not in (tmp_path / "real" / "skills" / "base" / "SKILL.md").read_text()  # the copy is versioned


def test_a_range_in_a_published_dependency_and_an_invalid_package_each_fail_the_check(tmp_path: Path) -> None:
    """The registry refuses the range (StrawHub's grammar), so the check names the publish that failed; the invalid
    package is named apart. Two independent faults in one run (each check costs a registry and a dozen commands)."""
    root = tree(tmp_path / "real")
    write(root, "roles/writer/ROLE.md", role("writer", skills=("uses-base^1.0",)))
    write(root, "skills/broken/SKILL.md", "---\nname: Broken\ndescription: d\n---\n")
    done = check(root)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "13/14 validated" in done.stdout, done.stdout
    assert f"  FAILED {root / 'skills' / 'broken'}: invalid: " in done.stdout, done.stdout
    assert re.search(r"^  FAILED .*'uses-base\^1\.0' is not a published dependency", done.stdout, re.M), done.stdout


def test_each_real_integration_must_parse_with_an_entry_point_and_a_required_bot_token() -> None:
    """The check the real Telegram, Slack and Discord adapters pass in CI (shapes copied, not their text)."""
    import importlib.util

    from strawpot.model.package import parse_package

    spec = importlib.util.spec_from_file_location("real_package_checks", ROOT / "scripts" / "real_package_checks.py")
    assert spec is not None and spec.loader is not None
    checks = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = checks  # its dataclasses look their module up there
    spec.loader.exec_module(checks)

    def integration(name: str, env: str) -> object:
        text = (f"---\nname: {name}\ndescription: d\nmetadata:\n  strawpot:\n    entry_point: python adapter.py\n"
                f"    install:\n      linux: pip install -r requirements.txt\n    env:\n{env}---\n")
        return parse_package({"INTEGRATION.md": text.encode()})

    good = integration("chat", "      STRAWPOT_BOT_TOKEN:\n        required: true\n"
                               "      STRAWPOT_APP_TOKEN:\n        required: true\n")
    tokenless = integration("mute", "      POLL_INTERVAL:\n        required: false\n")
    report = checks.Report()
    checks.check_integrations([good, tokenless], report)
    assert report.integrations == [
        "integration chat: entry point 'python adapter.py', requires ['STRAWPOT_APP_TOKEN', 'STRAWPOT_BOT_TOKEN']",
        "integration mute: entry point 'python adapter.py', requires []"]
    assert report.unexpected == [
        "integration mute: entry point 'python adapter.py', requires []: expected an entry point and a required "
        "STRAWPOT_BOT_TOKEN"]
