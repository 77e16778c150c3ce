"""install / lock / sync / uninstall / update through the command line, against a live registry on loopback."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path

from strawpot.model.lockfile import Lockfile

REVIEWER_CLOSURE = {
    ("role", "reviewer"), ("role", "implementer"), ("agent", "stub-agent"),
    ("skill", "code-review"), ("skill", "code-style"), ("skill", "diff-reading"), ("skill", "git-workflow"),
    ("skill", "refactoring"), ("skill", "security-baseline"), ("skill", "test-driven"), ("skill", "testing-basics"),
}
PLURAL = {"skill": "skills", "role": "roles", "agent": "agents"}


def installed(project: Path) -> dict[tuple[str, str], str]:
    found = {}
    for kind, plural in PLURAL.items():
        folder = project / ".strawpot" / plural
        if folder.is_dir():
            for entry in folder.iterdir():
                if not entry.name.startswith("."):
                    found[(kind, entry.name)] = (entry / ".version").read_text()
    return found


def test_install_a_role_in_an_empty_folder(cli, project, registry):
    result = cli("install", "role", "reviewer", "--project", project.dir)
    assert result.code == 0, result.text
    tree = installed(project.dir)
    assert set(tree) == REVIEWER_CLOSURE
    assert tree[("role", "reviewer")] == "1.0.0\n"
    assert tree[("agent", "stub-agent")] == "0.1.0\n"
    manifest = tomllib.loads(project.manifest_path.read_text())
    assert manifest == {"roles": {"reviewer": "^1.0.0"}}

    lock = Lockfile.load(project.lock_path)
    assert lock.manifest_hash.startswith("sha256:")
    reviewer = lock.get(*("role", "reviewer")) if False else next(p for p in lock.packages if p.name == "reviewer")
    assert reviewer.source == registry.url
    assert reviewer.default_agent == "stub-agent"
    assert reviewer.archive_sha256 and reviewer.archive_size
    edges = {(d.kind.value, d.name): d.spec for d in reviewer.dependencies}
    assert edges == {("skill", "code-review"): "*", ("skill", "security-baseline"): "*",
                     ("role", "implementer"): "*", ("agent", "stub-agent"): "*"}
    # every locked file is on disk with that hash; executables keep their bit
    for pkg in lock.packages:
        base = project.dir / ".strawpot" / pkg.kind.plural / pkg.name
        for f in pkg.files:
            data = (base / f.path).read_bytes()
            assert hashlib.sha256(data).hexdigest() == f.sha256 and len(data) == f.size
            assert bool((base / f.path).stat().st_mode & 0o100) == f.executable
    agent = next(p for p in lock.packages if p.name == "stub-agent")
    assert any(f.executable for f in agent.files)
    assert [t.name for t in agent.tools] == ["python3"]
    assert "role reviewer" in result.err  # the summary lists what was installed


def test_install_is_idempotent_and_the_second_run_does_nothing(cli, project):
    assert cli("install", "role", "reviewer", "--project", project.dir).code == 0
    lock_bytes = project.lock_path.read_bytes()
    again = cli("install", "--project", project.dir)
    assert again.code == 0
    assert "Already up to date (11 packages)" in again.err
    assert project.lock_path.read_bytes() == lock_bytes


def test_several_packages_in_one_call_with_specifiers(cli, project, registry):
    lib = registry.unique("multi-lib")
    registry.publish("skill", lib, "1.0.0")
    registry.publish("skill", lib, "1.5.0")
    registry.publish("skill", lib, "2.0.0")
    result = cli("install", "skill", f"{lib}@^1.0", "role", "scout", "skill", "task-planning>=1,<2",
                 "--project", project.dir)
    assert result.code == 0, result.text
    manifest = tomllib.loads(project.manifest_path.read_text())
    assert manifest["skills"] == {lib: "^1.0", "task-planning": ">=1,<2"}
    assert manifest["roles"] == {"scout": "^1.0.0"}
    tree = installed(project.dir)
    assert tree[("skill", lib)] == "1.5.0\n"
    assert {("skill", "github-pr"), ("skill", "diff-reading"), ("skill", "git-workflow")} <= set(tree)


def test_install_keeps_other_keys_of_the_manifest(cli, project):
    project.manifest_path.write_text(
        '# my project\n[orchestrator]\nrole = "scout"  # keep me\n\n[roles]\nscout = { version = "*", default_agent = "none-here" }\n'
    )  # a role's default agent the registry does not have is no dependency: the key stays as written
    assert cli("install", "role", "scout", "skill", "task-planning", "--project", project.dir).code == 0
    text = project.manifest_path.read_text()
    assert text.startswith('# my project\n[orchestrator]\nrole = "scout"  # keep me\n')
    assert 'scout = { version = "*", default_agent = "none-here" }' in text
    assert 'task-planning = "^1.0.0"' in text


def test_lock_check_locked_and_frozen(cli, project):
    project.manifest_path.write_text('[skills]\ngit-workflow = "*"\n')
    assert cli("lock", "--check", "--project", project.dir).code == 4  # no lock yet
    result = cli("lock", "--project", project.dir)
    assert result.code == 0, result.text
    assert not (project.dir / ".strawpot" / "skills").exists()  # lock installs nothing
    assert cli("lock", "--check", "--project", project.dir).code == 0
    old_lock = project.lock_path.read_bytes()

    project.manifest_path.write_text('[skills]\ngit-workflow = "*"\ncode-style = "^1"\n')
    stale = cli("lock", "--check", "--project", project.dir)
    assert stale.code == 4 and "out of date" in stale.err
    locked = cli("install", "--locked", "--project", project.dir)
    assert locked.code == 4
    assert project.lock_path.read_bytes() == old_lock
    assert not (project.dir / ".strawpot" / "skills").exists()

    frozen = cli("install", "--frozen", "--project", project.dir)
    assert frozen.code == 0, frozen.text
    assert set(installed(project.dir)) == {("skill", "git-workflow")}
    assert project.lock_path.read_bytes() == old_lock

    assert cli("install", "--project", project.dir).code == 0
    assert set(installed(project.dir)) == {("skill", "git-workflow"), ("skill", "code-style")}
    assert cli("lock", "--check", "--project", project.dir).code == 0


def test_offline_install_from_the_cache_with_the_registry_unreachable(cli, project, monkeypatch, unused_port, registry):
    assert cli("install", "role", "scout", "--project", project.dir).code == 0
    expected = installed(project.dir)
    import shutil

    shutil.rmtree(project.dir / ".strawpot")
    monkeypatch.setenv("STRAWPOT_REGISTRY_URL", f"http://127.0.0.1:{unused_port}")
    result = cli("install", "--offline", "--project", project.dir)
    assert result.code == 0, result.text
    assert installed(project.dir) == expected
    # a changed manifest re-resolves offline from the metadata cached for that registry
    monkeypatch.setenv("STRAWPOT_REGISTRY_URL", registry.url)
    project.manifest_path.write_text('[roles]\nscout = "^1.0.0"\n[skills]\ngithub-pr = "*"\n')
    assert cli("install", "--offline", "--project", project.dir).code == 0
    # something never downloaded cannot be installed offline: exit 6
    missing = cli("install", "--offline", "skill", "task-planning", "--project", project.dir)
    assert missing.code == 6 and "offline" in missing.err


def test_unreachable_registry_exits_6_naming_the_url(cli, project, monkeypatch, unused_port):
    url = f"http://127.0.0.1:{unused_port}"
    monkeypatch.setenv("STRAWPOT_REGISTRY_URL", url)
    result = cli("install", "role", "reviewer", "--project", project.dir)
    assert result.code == 6
    assert url in result.err and "Traceback" not in result.err
    assert not project.manifest_path.exists() and not project.lock_path.exists()


def test_sync_removes_extras_that_install_keeps(cli, project):
    assert cli("install", "skill", "git-workflow", "--project", project.dir).code == 0
    stray = project.dir / ".strawpot" / "skills" / "stray"
    stray.mkdir()
    (stray / "SKILL.md").write_text("x")
    (stray / ".version").write_text("9.9.9\n")
    assert cli("install", "--project", project.dir).code == 0
    assert stray.exists()
    dry = cli("sync", "--dry-run", "--project", project.dir)
    assert dry.code == 0 and stray.exists() and "stray" in dry.err
    result = cli("sync", "--project", project.dir)
    assert result.code == 0, result.text
    assert not stray.exists()
    assert set(installed(project.dir)) == {("skill", "git-workflow")}


def test_uninstall_removes_orphans_but_keeps_shared_dependencies(cli, project):
    assert cli("install", "role", "scout", "skill", "diff-reading", "--project", project.dir).code == 0
    assert ("skill", "github-pr") in installed(project.dir)
    result = cli("uninstall", "role", "scout", "--project", project.dir)
    assert result.code == 0, result.text
    assert set(installed(project.dir)) == {("skill", "diff-reading"), ("skill", "git-workflow")}
    assert "scout" not in project.manifest_path.read_text()
    lock = Lockfile.load(project.lock_path)
    assert {p.name for p in lock.packages} == {"diff-reading", "git-workflow"}
    not_direct = cli("uninstall", "skill", "git-workflow", "--project", project.dir)
    assert not_direct.code == 2 and "required by skill diff-reading" in not_direct.err


def test_update_respects_the_manifest_specifiers(cli, project, registry):
    lib = registry.unique("upd-lib")
    registry.publish("skill", lib, "1.0.0")
    assert cli("install", "skill", lib, "--project", project.dir).code == 0
    assert tomllib.loads(project.manifest_path.read_text())["skills"][lib] == "^1.0.0"
    registry.publish("skill", lib, "1.1.0")
    registry.publish("skill", lib, "2.0.0")
    assert cli("install", "--project", project.dir).code == 0
    assert installed(project.dir)[("skill", lib)] == "1.0.0\n"  # the lock is kept

    outdated = cli("outdated", "--json", "--project", project.dir)
    assert outdated.code == 0
    row = next(r for r in json.loads(outdated.out)["packages"] if r["name"] == lib)
    assert (row["locked"], row["allowed"], row["newest"]) == ("1.0.0", "1.1.0", "2.0.0")

    result = cli("update", "skill", lib, "--project", project.dir)
    assert result.code == 0, result.text
    assert installed(project.dir)[("skill", lib)] == "1.1.0\n"
    assert "1.0.0 → 1.1.0" in result.err
    assert cli("update", "skill", "nope", "--project", project.dir).code == 2


def test_conflict_exits_3_with_the_chain(cli, project, registry):
    base, left, right, role = (registry.unique(p) for p in ("cf-base", "cf-left", "cf-right", "cf-role"))
    registry.publish("skill", base, "1.0.0")
    registry.publish("skill", base, "2.0.0")
    registry.publish("skill", left, "1.0.0", skills=[f"{base}==1.0.0"])
    registry.publish("skill", right, "1.0.0", skills=[f"{base}==2.0.0"])
    registry.publish("role", role, "1.0.0", skills=[left, right])
    result = cli("install", "role", role, "--project", project.dir)
    assert result.code == 3
    for name in (f"skill {left}", f"skill {right}", f"skill {base}", f"role {role}"):
        assert name in result.err
    assert "Traceback" not in result.err
    assert not project.lock_path.exists() and not project.manifest_path.exists()


def test_unknown_package_suggests_a_close_name(cli, project):
    result = cli("install", "skill", "code-reveiw", "--project", project.dir)
    assert result.code == 2
    assert "skill code-reveiw was not found" in result.err
    assert "did you mean skill code-review?" in result.err


def test_malformed_manifest_and_lock_name_file_and_position(cli, project):
    project.manifest_path.write_text('[skills]\ngit-workflow = "*"\nbroken = \n')
    result = cli("install", "--project", project.dir)
    assert result.code == 2
    assert f"{project.manifest_path}:3" in result.err and "Traceback" not in result.err

    project.manifest_path.write_text('[skills]\ngit-workflow = "*"\n')
    project.lock_path.write_text('version = 1\n[[package]\nkind = "skill"\n')
    result = cli("install", "--project", project.dir)
    assert result.code == 2
    assert f"{project.lock_path}:2:" in result.err  # file:line:column, as for the manifest


def test_dry_run_and_json_write_nothing(cli, project):
    result = cli("install", "role", "scout", "--dry-run", "--json", "--project", project.dir)
    assert result.code == 0, result.text
    report = json.loads(result.out)
    assert report["schema_version"] == 2 and report["command"] == "install" and report["dry_run"] is True
    assert {p["name"] for p in report["installed"]} >= {"scout", "github-pr"}
    assert not project.manifest_path.exists() and not project.lock_path.exists()
    assert not (project.dir / ".strawpot" / "roles").exists()


def test_global_install_uses_strawpot_home(cli, tmp_path, isolated_env):
    result = cli("install", "--global", "skill", "git-workflow")
    assert result.code == 0, result.text
    home = isolated_env / "global"
    assert (home / "skills" / "git-workflow" / ".version").read_text() == "1.0.0\n"
    # Manifest and lock one folder down: $STRAWPOT_HOME/strawpot.lock is strawhub 0.1.54's own lockfile.
    assert 'git-workflow = "^1.0.0"' in (home / "global" / "strawpot.toml").read_text()
    assert (home / "global" / "strawpot.lock").exists()
    assert not (home / "strawpot.lock").exists()
    assert cli("verify", "--global").code == 0


def test_a_clone_without_registry_settings_installs_from_where_the_lock_came_from(cli, project, monkeypatch):
    assert cli("install", "skill", "git-workflow", "--project", project.dir).code == 0
    import shutil

    shutil.rmtree(project.dir / ".strawpot")
    monkeypatch.delenv("STRAWPOT_REGISTRY_URL")
    result = cli("install", "--project", project.dir)
    assert result.code == 0, result.text
    assert (project.dir / ".strawpot" / "skills" / "git-workflow" / ".version").read_text() == "1.0.0\n"


def test_agent_settings_without_version_never_stale_the_lock(cli, project):
    assert cli("install", "role", "reviewer", "--project", project.dir).code == 0
    lock = project.lock_path.read_bytes()
    with project.manifest_path.open("a") as fh:
        fh.write('\n[agents.stub-agent]   # params only\ngreeting = "bonjour"\n')
    assert cli("lock", "--check", "--project", project.dir).code == 0
    locked = cli("install", "--locked", "--project", project.dir)
    assert locked.code == 0, locked.text
    assert project.lock_path.read_bytes() == lock
    # nothing rewrote the settings table
    assert "[agents.stub-agent]   # params only\ngreeting = \"bonjour\"" in project.manifest_path.read_text()
