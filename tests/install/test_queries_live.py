"""tree, why, list, info, search and config through the command line, against a live registry."""

from __future__ import annotations

import json
import re


def test_tree_shows_the_locked_graph_from_the_manifest_roots(cli, project):
    assert cli("install", "role", "reviewer", "--project", project.dir).code == 0
    result = cli("tree", "--project", project.dir)
    assert result.code == 0
    lines = result.out.splitlines()
    assert lines[0] == "role reviewer 1.0.0"
    assert "├── agent stub-agent 0.1.0" in lines
    assert any(line.endswith("skill code-review 1.2.0") for line in lines)
    assert any("(*)" in line for line in lines)  # shared subtrees are printed once

    report = json.loads(cli("tree", "--json", "--project", project.dir).out)
    assert report["schema_version"] == 2
    (root,) = report["roots"]
    assert (root["kind"], root["name"], root["version"], root["spec"]) == ("role", "reviewer", "1.0.0", "^1.0.0")
    children = {(c["kind"], c["name"]): c for c in root["dependencies"]}
    assert children[("role", "implementer")]["spec"] == "*"


def test_why_names_every_chain_from_the_manifest(cli, project):
    assert cli("install", "role", "reviewer", "skill", "code-style", "--project", project.dir).code == 0
    result = cli("why", "skill", "testing-basics", "--project", project.dir)
    assert result.code == 0
    assert result.out.splitlines() == [
        "role reviewer 1.0.0 → role implementer 1.0.0 → skill refactoring 1.0.0 → skill test-driven 1.0.0 → "
        "skill testing-basics 1.0.0",
        "role reviewer 1.0.0 → role implementer 1.0.0 → skill test-driven 1.0.0 → skill testing-basics 1.0.0"]
    direct = cli("why", "skill", "code-style", "--project", project.dir)
    assert "skill code-style 1.0.0  (in strawpot.toml)" in direct.out
    assert cli("why", "skill", "github-pr", "--project", project.dir).code == 2


def test_list_shows_installed_packages_and_the_registry(cli, project):
    assert cli("install", "skill", "git-workflow", "--project", project.dir).code == 0
    local = json.loads(cli("list", "--json", "--project", project.dir).out)
    assert local["packages"] == [{"kind": "skill", "name": "git-workflow", "version": "1.0.0", "status": "locked"}]
    remote = json.loads(cli("list", "role", "--remote", "--json", "--project", project.dir).out)
    assert {"reviewer", "implementer", "lead", "scout"} <= {p["name"] for p in remote["packages"]}


def test_info_and_search(cli, project):
    info = cli("info", "role", "reviewer")
    assert info.code == 0, info.text
    assert "role reviewer 1.0.0" in info.out and "skills: code-review, security-baseline" in info.out
    missing = cli("info", "role", "reveiwer")
    assert missing.code == 2 and "did you mean role reviewer?" in missing.err
    found = json.loads(cli("search", "review", "--json").out)
    assert any(r["slug"] == "code-review" for r in found["results"])


def test_config_says_where_the_registry_url_comes_from(cli, project, registry, monkeypatch):
    report = json.loads(cli("config", "--json", "--project", project.dir).out)
    assert report["registry_url"] == registry.url
    assert report["registry_url_from"] == "env STRAWPOT_REGISTRY_URL"
    monkeypatch.delenv("STRAWPOT_REGISTRY_URL")
    project.manifest_path.write_text('[registry]\nurl = "http://example.invalid:1"\n')
    report = json.loads(cli("config", "--json", "--project", project.dir).out)
    assert report["registry_url"] == "http://example.invalid:1"
    assert report["registry_url_from"] == f"project {project.manifest_path}:2"
    assert report["paths"]["lock"].endswith("strawpot.lock")


def _camel_keys(value, path=""):  # type: ignore[no-untyped-def]
    """Every camelCase key in a report, outside the values kept as the package wrote them."""
    from strawpot.model.registry_answer import AS_WRITTEN

    if isinstance(value, dict):
        return [f"{path}.{k}" for k in value if re.search(r"[a-z][A-Z]", k)] + [
            hit for k, v in value.items() if k not in AS_WRITTEN for hit in _camel_keys(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [hit for v in value for hit in _camel_keys(v, f"{path}[]")]
    return []


def test_info_and_search_reports_are_snake_case_with_times_in_seconds(cli, project):
    import time

    info = json.loads(cli("info", "role", "reviewer", "--json").out)
    assert _camel_keys(info) == []
    detail = info["detail"]
    assert detail["latest_version"]["version"] == "1.0.0" and "display_name" in detail
    for when in (detail["created_at"], detail["updated_at"], detail["latest_version"]["created_at"]):
        assert abs(when - time.time()) < 3600  # seconds since the epoch, not the registry's milliseconds
    assert "skills" in detail["latest_version"]["dependencies"]
    found = json.loads(cli("search", "review", "--json").out)
    assert _camel_keys(found) == [] and all("display_name" in r for r in found["results"])
