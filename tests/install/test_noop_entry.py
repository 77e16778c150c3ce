"""A bare `strawpot install` with nothing to do answers from the entry point, before click or rich is imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from strawpot.commands._early import bare_install as _bare_install

# run the entry point in a fresh interpreter and print which heavy modules it imported
PROBE = ("import sys\nfrom strawpot.cli import main\ncode = main(sys.argv[1:])\n"
         "print(','.join(m for m in ('click', 'rich', 'httpx', 'strawpot.cli_group') if m in sys.modules))\n"
         "sys.exit(code)")


def entry(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROBE, *args], cwd=cwd, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args", [
    ["install"], ["-q", "install"], ["--color", "never", "install", "--frozen"], ["--color=always", "install"],
    ["install", "--skip-tools", "--offline", "-y", "--locked"], ["install", "--registry", "http://x"],
    ["install", "--registry=http://x", "-g"],
])
def test_the_flags_a_bare_install_may_carry(args):
    assert _bare_install(args) is not None


@pytest.mark.parametrize("args", [
    [], ["--help"], ["install", "--help"], ["install", "--json"], ["install", "--dry-run"], ["install", "--no-save"],
    ["install", "--ignore-scripts"], ["install", "skill", "x"], ["lock"], ["-qv", "install"], ["--color", "pink", "install"],
    ["--color"], ["install", "--frozen", "--locked"], ["install", "--project"], ["install", "--project", "--frozen"],
    ["install", "--project", "/no/such/folder"], ["install", "-p=."], ["install", "--registry"], ["--json", "install"],
])
def test_anything_else_goes_through_click(args):
    assert _bare_install(args) is None


def test_project_flag_names_the_folder(tmp_path):
    assert _bare_install(["install", "--project", str(tmp_path)])["project"] == tmp_path
    assert _bare_install(["install", f"--project={tmp_path}"])["project"] == tmp_path
    assert _bare_install(["install", "-p", str(tmp_path)])["project"] == tmp_path


def test_a_noop_install_imports_neither_click_nor_rich(cli, project):
    assert cli("install", "role", "reviewer", "--project", project.dir).code == 0

    done = entry("install", cwd=project.dir)
    assert done.returncode == 0, done.stderr
    assert "Already up to date (11 packages)" in done.stderr
    assert done.stdout.strip() == ""  # none of the heavy modules

    quiet = entry("-q", "install", "--frozen", cwd=project.dir)
    assert (quiet.returncode, quiet.stderr, quiet.stdout.strip()) == (0, "", "")


def test_a_tree_that_differs_takes_the_full_path_and_is_repaired(cli, project):
    assert cli("install", "role", "reviewer", "--project", project.dir).code == 0
    skill = project.dir / ".strawpot" / "skills" / "code-review" / "SKILL.md"
    original = skill.read_bytes()
    skill.write_bytes(original + b"\nedited\n")

    done = entry("install", cwd=project.dir)
    assert done.returncode == 0, done.stderr
    assert "Already up to date" not in done.stderr  # the full path ran (still without click: the early answer's)
    assert "strawpot.cli_group" not in done.stdout
    assert skill.read_bytes() == original
    assert "Already up to date" in entry("install", cwd=project.dir).stderr


def test_the_quiet_flag_silences_the_noop_line_on_the_full_path_too(cli, project):
    assert cli("install", "role", "reviewer", "--project", project.dir).code == 0
    # `-qv` is not parsed by the entry point, so click runs the command and its no-op check
    done = entry("-qv", "install", cwd=project.dir)
    assert (done.returncode, done.stderr) == (0, "")
    assert "strawpot.cli_group" in done.stdout


def test_an_install_to_a_pipe_does_not_import_rich(cli, project):
    done = entry("install", "role", "reviewer", "--project", str(project.dir), cwd=project.dir)
    assert done.returncode == 0, done.stderr
    assert "rich" not in done.stdout.strip().split(","), done.stdout  # plain lines need no rich Console
    assert "Installed: 11 installed" in done.stderr and " + role reviewer 1.0.0" in done.stderr
    failed = entry("install", "skill", "no-such-skill-anywhere", "--project", str(project.dir), cwd=project.dir)
    assert failed.returncode != 0 and "error:" in failed.stderr  # an error still renders through rich


def test_a_settings_table_next_to_a_requirement_tables_name_is_read_alike_by_both_paths(cli, project):
    """`[memory]` (docs/config.md) is a settings table: a no-op on the fast path, installs on the full path;
    a requirement written into it is refused by both, the fast path leaving it to the full one."""
    assert cli("install", "role", "reviewer", "--project", project.dir).code == 0
    manifest = project.dir / "strawpot.toml"
    manifest.write_text(manifest.read_text() + '\n[memory]\nprovider = "builtin"\n')
    done = entry("install", cwd=project.dir)
    assert done.returncode == 0, done.stderr
    assert "Already up to date" in done.stderr and done.stdout.strip() == ""  # the fast path answered
    assert cli("install", "--project", project.dir).code == 0  # and the full path agrees

    manifest.write_text(manifest.read_text() + 'code-review = "*"\n')
    done = entry("install", cwd=project.dir)
    assert done.returncode == 2, done.stderr
    assert "[memory] has no setting 'code-review'; did you mean [memories]?" in done.stderr
    assert cli("install", "--project", project.dir).code == 2


def test_a_current_lock_is_answered_by_the_pipelines_first_step_without_the_pipeline(cli, project):
    assert cli("install", "role", "reviewer", "--project", project.dir).code == 0
    probe = ("import sys\nfrom strawpot.cli import main\ncode = main(sys.argv[1:])\n"
             "print(','.join(m for m in ('strawpot.install.service', 'tomlkit', 'httpx') if m in sys.modules))\n"
             "sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", probe, "lock"], cwd=project.dir, capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, ""), done.stderr
    assert "strawpot.lock is up to date (11 packages)" in done.stderr
    (project.dir / "strawpot.toml").write_text((project.dir / "strawpot.toml").read_text() + "\n[skills]\nx = \"*\"\n")
    stale = subprocess.run([sys.executable, "-c", probe, "lock", "--check"], cwd=project.dir, capture_output=True,
                           text=True, timeout=60)
    assert stale.returncode == 4 and "strawpot.install.service" in stale.stdout, stale.stderr


def test_a_noop_reads_an_unchanged_manifest_by_its_bytes_and_parses_a_changed_one(cli, project):
    """The index names the manifest's bytes that gave the lock's hash: a no-op with those bytes parses no TOML and
    loads no settings schema; other bytes are hashed as before (a comment: still a no-op; a requirement: not)."""
    assert cli("install", "role", "reviewer", "--project", project.dir).code == 0
    probe = ("import sys\nfrom strawpot.cli import main\ncode = main(sys.argv[1:])\n"
             "print(','.join(m for m in ('tomllib', 'strawpot.model.settings', 'strawpot.cli_group') "
             "if m in sys.modules))\nsys.exit(code)")

    def noop() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", probe, "install"], cwd=project.dir, capture_output=True,
                              text=True, timeout=60)

    done = noop()
    assert (done.returncode, done.stdout.strip()) == (0, ""), done.stderr
    assert "Already up to date (11 packages)" in done.stderr
    manifest = project.dir / "strawpot.toml"
    manifest.write_text(manifest.read_text() + "\n# a comment changes the bytes, not the requirements\n")
    done = noop()
    assert done.returncode == 0 and "Already up to date" in done.stderr, done.stderr
    # hashed from its contents: the same hash (requirement tables alone: the settings schema is not loaded)
    assert done.stdout.strip() == "tomllib"
    manifest.write_text(manifest.read_text() + '\n[skills]\nsecurity-review = "*"\n')
    done = noop()
    assert "Already up to date" not in done.stderr and "Resolving" in done.stderr, done.stderr  # the full path


@pytest.mark.parametrize("planted", ["fifo", "endless link"])
def test_a_fifo_or_an_endless_link_planted_in_the_tree_is_repaired_not_waited_on(cli, project, planted):
    """An agent (or anything that writes the tree) plants a FIFO or a link to /dev/zero as the index, a package's
    `.version` and a built package's install record: the no-op check neither blocks on them nor reads them without
    end; the full path reinstalls what they stood for."""
    import os

    assert cli("install", "role", "reviewer", "--project", project.dir).code == 0
    tree = project.dir / ".strawpot"
    planted_paths = [tree / ".install-index.json", tree / "skills" / "code-review" / ".version",
                     tree / "roles" / "reviewer" / ".install-record.json"]
    for path in planted_paths:
        path.unlink(missing_ok=True)
        if planted == "fifo":
            os.mkfifo(path)
        else:
            path.symlink_to("/dev/zero")
    done = entry("install", cwd=project.dir)  # a read that blocked or never ended times out
    if planted == "endless link":  # the full path writes nothing through a link out of the project
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert f"{planted_paths[0]} is a link to /dev/zero, outside {project.dir}; refused" in done.stderr
        return
    assert done.returncode == 0, done.stderr
    assert "Already up to date" not in done.stderr
    assert (tree / "skills" / "code-review" / ".version").read_text().strip() == "1.2.0"
    assert "Already up to date (11 packages)" in entry("install", cwd=project.dir).stderr


def test_a_padded_version_file_is_one_the_no_op_check_and_verify_agree_on(cli, project):
    """A `.version` padded past what any reader takes (an agent's edit) is not an install to either reader: the no-op
    check does not answer "up to date" while `verify` says "not installed", the full path rewrites it."""
    assert cli("install", "role", "reviewer", "--project", project.dir).code == 0
    version = project.dir / ".strawpot" / "skills" / "code-review" / ".version"
    version.write_text("1.2.0" + " " * 5000 + "\n")
    done = entry("install", cwd=project.dir)
    assert done.returncode == 0, done.stderr
    assert "Already up to date" not in done.stderr
    assert version.read_text().strip() == "1.2.0" and len(version.read_bytes()) < 100
    assert cli("verify", "--project", project.dir).code == 0
