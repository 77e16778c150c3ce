"""Unit tests of the install services over an in-memory registry: provider, tools, fast check, yanked."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from resolver import Version
from strawpot.install.fastcheck import manifest_hash, up_to_date
from strawpot.install.options import Edit, Options, Requested
from strawpot.install.provider import HubProvider
from strawpot.install.service import run
from strawpot.model.kinds import Kind
from strawpot.model.manifest import Manifest

OPTS = Options(registry="http://hub.test")


def test_provider_prefetches_the_closure_in_waves_and_skips_the_role_wildcard(fakehub, hub_client):
    fakehub.add("skill", "leaf", "1.0.0")
    fakehub.add("skill", "mid", "1.0.0", deps=["leaf^1.0"])
    fakehub.add("agent", "bot", "1.0.0")
    fakehub.add("role", "top", "1.0.0", deps={"skills": ["mid"], "roles": ["*"]}, default_agent="bot")
    provider = HubProvider(hub_client)
    provider.prefetch(["role:top"])
    assert fakehub.count("/versions") == 4  # top; mid + bot; leaf: everything before the solver asks
    deps = provider.dependencies("role:top", Version.parse("1.0.0"))
    assert set(deps) == {"skill:mid", "agent:bot"}
    assert fakehub.count("/versions") == 4


def test_default_agent_missing_from_the_registry_is_not_a_dependency(fakehub, hub_client, project):
    fakehub.add("role", "lonely", "1.0.0", default_agent="no-such-agent")
    out = run(project, Edit(add=(Requested(Kind.ROLE, "lonely"),)), OPTS, client=hub_client)
    assert out.lock is not None
    assert [p.name for p in out.lock.packages] == ["lonely"]
    assert out.lock.packages[0].default_agent == "no-such-agent"


def test_manifest_default_agent_override_pulls_that_agent(fakehub, hub_client, project):
    fakehub.add("agent", "mine", "2.0.0")
    fakehub.add("agent", "theirs", "1.0.0")
    fakehub.add("role", "r", "1.0.0", default_agent="theirs")
    project.manifest_path.write_text('[roles]\nr = { version = "*", default_agent = "mine" }\n')
    out = run(project, None, OPTS, client=hub_client)
    assert out.lock is not None
    assert {p.name for p in out.lock.packages} == {"r", "mine"}


def test_yanked_versions_are_skipped_by_fresh_locks_but_kept_when_locked(fakehub, hub_client, project):
    fakehub.add("skill", "y", "1.0.0")
    v11 = fakehub.add("skill", "y", "1.1.0")
    fakehub.add("skill", "z", "1.0.0")
    run(project, Edit(add=(Requested(Kind.SKILL, "y"),)), OPTS, client=hub_client)
    assert (project.tree_root / "skills" / "y" / ".version").read_text() == "1.1.0\n"
    v11.yanked = True
    project.manifest_path.write_text('[skills]\ny = "^1.0.0"\n')
    out = run(project, Edit(add=(Requested(Kind.SKILL, "z"),)), OPTS, client=hub_client)
    assert out.resolved and out.lock is not None
    assert out.lock.get(Kind.SKILL, "y").version == "1.1.0"  # locked: kept although yanked
    out = run(project, Edit(upgrade_all=True), OPTS, client=hub_client)
    assert out.lock is not None and out.lock.get(Kind.SKILL, "y").version == "1.0.0"
    assert (project.tree_root / "skills" / "y" / ".version").read_text() == "1.0.0\n"


def test_missing_tools_are_reported_and_run_only_when_trusted_and_asked(fakehub, hub_client, project, tmp_path,
                                                                        monkeypatch):
    import json

    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    hint = f"printf '#!/bin/sh\\n' > {bindir}/sp-fake-tool && chmod +x {bindir}/sp-fake-tool"
    tools = {"sp-fake-tool": {"description": "a tool", "install": {"linux": hint, "macos": hint}}}
    main = f"---\nname: needy\ndescription: d\nmetadata: {{strawpot: {{tools: {json.dumps(tools)}}}}}\n---\n"
    fakehub.add("agent", "needy", "1.0.0", tools=tools, files={"AGENT.md": main.encode()})
    out = run(project, Edit(add=(Requested(Kind.AGENT, "needy"),)), OPTS, client=hub_client)
    assert [(t.agent, t.tool, t.hint) for t in out.missing_tools] == [("needy", "sp-fake-tool", hint)]
    assert not (bindir / "sp-fake-tool").exists()

    skipped = run(project, None, Options(registry="http://hub.test", tools="skip"), client=hub_client)
    assert skipped.missing_tools == []

    echoed: list[str] = []

    class Echo:
        def status(self, message: str) -> None:
            echoed.append(message)

        def progress(self, label, total):  # pragma: no cover - nothing to download here
            raise AssertionError

        def waiting(self, message):  # pragma: no cover - nothing to resolve here
            raise AssertionError

    untrusted = run(project, None, Options(registry="http://hub.test", tools="run"), client=hub_client)
    assert [t.tool for t in untrusted.missing_tools] == ["sp-fake-tool"] and not (bindir / "sp-fake-tool").exists()
    assert "run `strawpot trust agent:needy`" in untrusted.warnings[-1]
    from strawpot.model.manifest import Manifest

    manifest = Manifest.load(project.manifest_path)  # `strawpot trust agent:needy`: listed, then confirmed here
    manifest.trust(["agent:needy"])
    manifest.save()
    run(project, None, Options(registry="http://hub.test", tools="skip", trust_now=frozenset({"agent:needy"})),
        client=hub_client)
    out = run(project, None, Options(registry="http://hub.test", tools="run"), client=hub_client, reporter=Echo())
    assert out.missing_tools == []
    assert echoed == [f"$ {hint}"]
    assert (bindir / "sp-fake-tool").stat().st_mode & stat.S_IXUSR


@pytest.mark.parametrize(
    "text",
    [
        "",
        '[skills]\na = "^1.2"\nb = ""\n',
        '[roles]\nr = { version = ">=1,<3", default_agent = "x" }\n[skills]\nz = "*"\na = "1.0.0"\n',
        '[agents]\nq = { version = "^0.1", other = 1 }\n[orchestrator]\nrole = "r"\n',
        '[memories]\nm = " ~1.2 "\n[integrations]\ni = "*"\n',
    ],
)
def test_fast_manifest_hash_equals_the_manifest_model(tmp_path: Path, text: str):
    path = tmp_path / "strawpot.toml"
    if text:
        path.write_text(text)
    assert manifest_hash(path) == Manifest.load(path).dependency_hash()


def test_fast_check_notices_a_changed_size_and_a_changed_manifest(fakehub, hub_client, project):
    fakehub.add("skill", "a", "1.0.0")
    run(project, Edit(add=(Requested(Kind.SKILL, "a"),)), OPTS, client=hub_client)
    assert up_to_date(project.manifest_path, project.lock_path, project.tree_root) is not None
    main = project.tree_root / "skills" / "a" / "SKILL.md"
    main.write_bytes(main.read_bytes() + b"!")
    assert up_to_date(project.manifest_path, project.lock_path, project.tree_root) is None
    run(project, None, OPTS, client=hub_client)  # repairs the file
    assert up_to_date(project.manifest_path, project.lock_path, project.tree_root) is not None
    project.manifest_path.write_text(project.manifest_path.read_text() + 'b = "*"\n')
    assert up_to_date(project.manifest_path, project.lock_path, project.tree_root) is None
    assert up_to_date(project.manifest_path, project.lock_path, project.tree_root, frozen=True) is not None


def test_v1_only_registry_locks_hashes_of_the_files_it_served(fakehub, hub_client, project, monkeypatch):
    """A server without the extensions: the lock records what was fetched, and installs check against it."""
    import httpx

    fakehub.add("skill", "old", "1.0.0", files={"extra.md": b"more\n"})
    serve = fakehub.__call__

    def v1_only(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path.endswith("/versions"):
            return httpx.Response(405, text="Method Not Allowed")
        if path == "/api/v1/skills/old":
            return httpx.Response(200, json={"slug": "old", "latestVersion": {"version": "1.0.0", "files": [
                {"path": "SKILL.md", "size": 10}, {"path": "extra.md", "size": 5}]}})
        if path == "/api/v1/skills/old/file":
            files = fakehub.packages[("skill", "old")][0].files
            return httpx.Response(200, content=files[request.url.params["path"]])
        return serve(request)

    monkeypatch.setattr(hub_client._http, "_transport", httpx.MockTransport(v1_only))
    out = run(project, Edit(add=(Requested(Kind.SKILL, "old"),)), OPTS, client=hub_client)
    assert out.lock is not None
    pkg = out.lock.packages[0]
    assert pkg.archive_sha256 is None and {f.path for f in pkg.files} == {"SKILL.md", "extra.md"}
    assert (project.tree_root / "skills" / "old" / "extra.md").read_bytes() == b"more\n"
    assert [r.content for r in fakehub.requests if r.url.path == "/api/v1/downloads"] == [
        b'{"kind":"skill","slug":"old","version":"1.0.0"}'
    ]  # installed from v1 files: counted the v1 way


def test_archive_installs_send_no_download_posts(fakehub, hub_client, project):
    """The archive GET is the count (registry-api.md); a cached archive counts nothing."""
    fakehub.add("skill", "a", "1.0.0")
    fakehub.add("role", "r", "1.0.0", deps={"skills": ["a"]})
    run(project, Edit(add=(Requested(Kind.ROLE, "r"),)), OPTS, client=hub_client)
    assert fakehub.count("/archive") == 2
    assert fakehub.count("/downloads") == 0


def test_the_no_op_index_is_used_only_while_it_matches_the_lock(fakehub, hub_client, project):
    import json

    from strawpot.install.fastcheck import INDEX_NAME

    fakehub.add("skill", "a", "1.0.0")
    run(project, Edit(add=(Requested(Kind.SKILL, "a"),)), OPTS, client=hub_client)
    index_path = project.tree_root / INDEX_NAME
    index = json.loads(index_path.read_text())
    assert [p[:3] for p in index["packages"]] == [["skills", "a", "1.0.0"]]
    assert up_to_date(project.manifest_path, project.lock_path, project.tree_root) is not None

    index["packages"][0][2] = "9.9.9"  # the index is trusted while its lock hash matches ...
    index_path.write_text(json.dumps(index))
    assert up_to_date(project.manifest_path, project.lock_path, project.tree_root) is None
    # ... and ignored once the lock's bytes change: then the lock itself is read
    project.lock_path.write_text(project.lock_path.read_text() + "# edited\n")
    assert up_to_date(project.manifest_path, project.lock_path, project.tree_root) is not None


def test_waiting_for_the_registry_shows_a_spinner_on_a_terminal_only() -> None:
    import io
    import time

    from rich.console import Console

    from strawpot.commands._install_output import RichReporter
    from strawpot.console import LazyConsole

    for terminal in (True, False):
        reporter = RichReporter()
        reporter.console = LazyConsole.around(Console(file=io.StringIO(), force_terminal=terminal, width=120))
        with reporter.waiting("waiting for http://hub.test (at most 120 s a request)"):
            time.sleep(0.3)
        shown = reporter.console.file.getvalue()  # type: ignore[attr-defined]
        assert ("waiting for http://hub.test (at most 120 s a request)" in shown) is terminal, shown
