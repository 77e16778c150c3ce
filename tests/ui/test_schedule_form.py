"""The Schedules page's add form: it stores a schedule through `schedule add`'s own path, with the runner it is
given (project default, local or ray), and refuses a hand-made POST of any other runner on the page, storing nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from dashboard.security import csrf_token
from orchestrator.projects import project_key
from tests.commands.test_hostile_cli import run
from tests.ui.test_app import BASE, SECRET, _client

CHOICES = {"default": "", "here": "local", "remote": "ray"}  # schedule name -> the form's runner value


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "strawpot.toml").write_text("")
    return root


def _post(client: TestClient, folder: Path, **fields: str) -> httpx.Response:
    form = {"csrf": csrf_token(SECRET), "name": "nightly", "cron": "0 9 * * 1-5", "project": project_key(folder),
            "role": "issue-triager", "task": "triage new issues", "timezone": "Europe/Paris", "overlap": "skip",
            "runner": "", **fields}
    return client.post("/schedules/add", data=form, headers={"origin": BASE})


def _listed(project: Path) -> dict[str, dict[str, object]]:
    """`strawpot schedule list --json` over the UI's data folder: what the CLI reads back, by name."""
    listed = run("schedule", "list", "--json", cwd=project, env={"STRAWPOT_DATA_DIR": str(project.parent / "data")})
    assert listed.returncode == 0, listed.stderr
    return {row["name"]: row for row in json.loads(listed.stdout)["schedules"]}


def _inert(page: str) -> None:
    """No inline script or style on the page (the CSP forbids both)."""
    assert not re.search(r"<script(?![^>]*\bsrc=)", page) and "style=" not in page and "<style" not in page


def test_the_form_offers_each_runner_and_stores_it_as_schedule_add_does(project: Path) -> None:
    client = _client(project)
    page = client.get("/schedules").text
    form = page.split('<form id="add-schedule"')[1].split("</form>")[0]
    assert f'<input type="hidden" name="csrf" value="{csrf_token(SECRET)}">' in form
    assert re.findall(r'<option value="([^"]*)"', form.split('name="runner"')[1].split("</select>")[0]) == [
        "", "local", "ray"]
    assert "project default" in form
    _inert(page)
    for name, runner in CHOICES.items():
        response = _post(client, project, name=name, runner=runner)
        assert response.status_code == 303 and response.headers["location"] == "/schedules", response.text
    rows = _listed(project)
    assert {name: row["runner"] for name, row in rows.items()} == {"default": None, "here": "local", "remote": "ray"}
    assert rows["remote"]["project"] == str(project.resolve()) and rows["remote"]["timezone"] == "Europe/Paris"
    assert (rows["remote"]["role"], rows["remote"]["task"]) == ("issue-triager", "triage new issues")

    # Stored exactly as `schedule add --runner ray` stores it: the same entry, the creation time aside.
    env = {"STRAWPOT_DATA_DIR": str(project.parent / "data")}
    added = run("schedule", "add", "cli", "--cron", "0 9 * * 1-5", "--role", "issue-triager", "--task",
                "triage new issues", "--timezone", "Europe/Paris", "--runner", "ray", cwd=project, env=env)
    assert added.returncode == 0, added.stderr
    stored = {e["name"]: e for e in json.loads((project.parent / "data" / "schedules.json").read_text())["schedules"]}
    assert {**stored["remote"], "name": "cli", "created": None} == {**stored["cli"], "created": None}

    listing = client.get("/schedules").text
    cells = dict(re.findall(r'<tr><td>([^<]*)</td>.*?<td class="runner">([^<]*)</td>', listing, re.S))
    assert cells == {"cli": "ray", "default": "project default", "here": "local", "remote": "ray"}
    assert "<th>Runner</th>" in listing


def test_a_hand_made_post_of_another_runner_is_refused_on_the_page_and_stores_nothing(project: Path) -> None:
    client = _client(project)
    refused = _post(client, project, runner="evil", task="<script>alert(1)</script>")
    assert refused.status_code == 400
    page = refused.text
    assert '<p class="error" id="add-error">cannot add schedule nightly: invalid runner &#39;evil&#39;: use one ' \
           "of local, ray</p>" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert" not in page  # the form kept it, inert
    _inert(page)
    assert not (project.parent / "data" / "schedules.json").exists() and _listed(project) == {}

    # Nor without the CSRF token, nor for a project the UI does not serve.
    no_token = client.post("/schedules/add", data={"name": "x", "runner": "ray"}, headers={"origin": BASE})
    assert no_token.status_code == 403
    elsewhere = _post(client, project, project="0123456789abcdef", runner="ray")
    assert elsewhere.status_code == 400 and "no project &#39;0123456789abcdef&#39;" in elsewhere.text
    assert _listed(project) == {}
