"""Install scripts under `[scripts] sandbox = "bwrap"` (the real bubblewrap): a hostile script is refused at each
attempt while what it builds in INSTALL_DIR and its package folder is installed; unsandboxed, each attempt works."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.install.test_install_scripts import package_dir, publish_skill, write_manifest


@pytest.fixture(autouse=True)
def _project_trust_counts(monkeypatch):
    """These tests write `[scripts] trusted` by hand: honour it as CI would (the trust model is tested apart)."""
    monkeypatch.setenv("STRAWPOT_TRUST_PROJECT", "1")

KEY = "not-a-real-key"
HOSTILE = ('echo pwned >> "$HOME/.bashrc" || echo "refused bashrc"; '
           'cat "$HOME/.ssh/id_ed25519" || echo "refused key"; '
           'echo out > "$HOME/escaped.txt" || echo "refused outside"; '
           'f=$(mktemp) && echo scratch > "$f" && rm "$f" && echo "tmp ok"; '
           'echo built > built.txt && mkdir -p "$INSTALL_DIR/bin" && '
           'printf "#!/bin/sh\\necho hi\\n" > "$INSTALL_DIR/bin/tool" && chmod +x "$INSTALL_DIR/bin/tool"')


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(KEY)
    (home / ".bashrc").write_text("# mine\n")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_a_hostile_install_script_is_walled_in_by_the_sandbox_only(cli, project, registry, home, sandbox):  # type: ignore[no-untyped-def]
    slug = publish_skill(registry, HOSTILE)
    write_manifest(project, f'[skills]\n{slug} = "*"\n\n[scripts]\ntrusted = ["skill:{slug}"]\nsandbox = "{sandbox}"\n')
    result = cli("install", "--project", project.dir)
    assert result.code == 0, result.text
    folder = package_dir(project, slug)
    assert (folder / "built.txt").read_text() == "built\n" and (folder / "bin" / "tool").is_file()
    log = (project.dir / ".strawpot" / "logs" / f"install-skill-{slug}.log").read_text().split("\n", 1)[1]
    assert "tmp ok" in log  # a private /tmp in the sandbox
    if sandbox == "bwrap":
        assert "refused bashrc" in log and "refused key" in log and "refused outside" in log, log
        assert KEY not in log and "Read-only file system" in log
        assert (home / ".bashrc").read_text() == "# mine\n" and not (home / "escaped.txt").exists()
    else:
        assert "refused" not in log and KEY in log
        assert (home / ".bashrc").read_text() == "# mine\npwned\n" and (home / "escaped.txt").is_file()


def test_network_off_cuts_the_script_off_and_a_missing_bwrap_refuses(cli, project, registry, home, tmp_path,  # type: ignore[no-untyped-def]
                                                                     monkeypatch):
    import socket

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        port = server.getsockname()[1]
        probe = f'python3 -c "import socket; socket.create_connection((\'127.0.0.1\', {port}), timeout=3)" ' \
                '&& echo reached || echo "no network"; mkdir -p bin && printf "x" > bin/t'
        slug = publish_skill(registry, probe)
        write_manifest(project, f'[skills]\n{slug} = "*"\n\n[scripts]\ntrusted = ["skill:{slug}"]\n'
                                'sandbox = "bwrap"\nnetwork = "off"\n')
        result = cli("install", "--project", project.dir)
        assert result.code == 0, result.text
        log = (project.dir / ".strawpot" / "logs" / f"install-skill-{slug}.log").read_text().split("\n", 1)[1]
        assert "no network" in log and "reached" not in log, log

    other = publish_skill(registry, "echo ran > ran.txt")
    write_manifest(project, f'[skills]\n{other} = "*"\n\n[scripts]\ntrusted = ["skill:{other}"]\nsandbox = "bwrap"\n')
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    refused = cli("install", "--project", project.dir)
    assert refused.code == 7, refused.text
    assert "bubblewrap (bwrap) is not on PATH" in refused.text and '[scripts] sandbox = "none"' in refused.text
    assert not package_dir(project, other).exists()
