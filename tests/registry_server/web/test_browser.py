"""The pages in a real browser (headless Chromium) against a live `strawpot registry serve`.

One browser and one registry for the module: the repository's fixture skills, roles and agent,
plus a skill whose README tries three ways to run script. Each test saves a screenshot under
test-artifacts/screenshots/.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from hub_client import HubClient
from registry_server.web.templating import CSP
from strawpot.publishing.prepare import prepare_upload
from tests._live_registry import LiveRegistry, start_registry
from tests.registry_server.test_compat_strawhub import FIXTURES, publish_order
from tests.registry_server.web._browser import save_screenshot

HOSTILE_README = """---
name: xss-probe
description: "A README that tries to run script three ways."
version: 1.0.0
---

# XSS probe

<script>alert(1)</script>

<img src=x onerror=alert(2)>

[x](javascript:alert(3))

![pixel](data:image/png;base64,iVBORw0KGgo=)
"""


def publish(client: HubClient, folder: Path) -> None:
    upload = prepare_upload(folder)
    client.publish(upload.kind.value, upload.fields, [(f.path, f.data) for f in upload.files])


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveRegistry]:
    work = tmp_path_factory.mktemp("web")
    with start_registry(work) as live:
        client = HubClient(live.url, token=live.token)
        publish(client, FIXTURES / "agents" / "stub-agent")
        for _, folder in publish_order():
            publish(client, folder)
        probe = work / "xss-probe"
        probe.mkdir()
        (probe / "SKILL.md").write_text(HOSTILE_README, encoding="utf-8")
        publish(client, probe)
        yield live


def wait(driver: webdriver.Chrome) -> WebDriverWait[webdriver.Chrome]:
    return WebDriverWait(driver, 60)


def console_errors(driver: webdriver.Chrome) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def test_home_search_package_and_a_dependency_link(browser: webdriver.Chrome, registry: LiveRegistry) -> None:
    browser.get(registry.url + "/")
    kinds = browser.find_element(By.CSS_SELECTOR, "ul.kinds").text
    assert "13 skills" in kinds and "4 roles" in kinds and "1 agent" in kinds, kinds
    assert browser.find_element(By.CSS_SELECTOR, "link[rel=stylesheet]").get_attribute("href")
    assert browser.execute_script("return getComputedStyle(document.body).marginTop") == "0px"  # the CSS applied
    save_screenshot(browser, "home")

    box = browser.find_element(By.ID, "q")
    box.send_keys("code review", Keys.ENTER)
    wait(browser).until(ec.url_contains("/search?q=code+review"))
    names = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "ul.packages a.name")]
    assert names[0] == "code-review", names
    save_screenshot(browser, "search")

    browser.find_element(By.LINK_TEXT, "code-review").click()
    wait(browser).until(ec.url_to_be(registry.url + "/skills/code-review"))
    assert browser.find_element(By.ID, "install-strawpot").text == "strawpot install skill code-review"
    assert browser.find_element(By.ID, "install-strawhub").text == "strawhub install skill code-review"
    assert browser.find_element(By.CSS_SELECTOR, ".body h1").text == "Code Review"
    assert "1.2.0" in browser.find_element(By.CSS_SELECTOR, "ul.versions").text
    save_screenshot(browser, "package")

    browser.find_element(By.CSS_SELECTOR, "ul.deps a[href='/skills/diff-reading']").click()
    wait(browser).until(ec.url_to_be(registry.url + "/skills/diff-reading"))
    used_by = browser.find_elements(By.CSS_SELECTOR, "ul.deps")[-1].text
    assert "code-review" in used_by, used_by
    assert console_errors(browser) == []
    save_screenshot(browser, "dependency")


def test_agent_page_shows_its_tools_and_params(browser: webdriver.Chrome, registry: LiveRegistry) -> None:
    browser.get(registry.url + "/roles/reviewer")
    browser.find_element(By.CSS_SELECTOR, "ul.deps a[href='/agents/stub-agent']").click()
    wait(browser).until(ec.url_to_be(registry.url + "/agents/stub-agent"))
    tables = browser.find_element(By.TAG_NAME, "aside").text
    assert "python3" in tables and "sudo apt-get install -y python3" in tables and "greeting" in tables
    save_screenshot(browser, "agent")


def test_copy_button_puts_the_install_command_on_the_clipboard(
    browser: webdriver.Chrome, registry: LiveRegistry
) -> None:
    browser.execute_cdp_cmd("Browser.grantPermissions", {
        "origin": registry.url, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    browser.get(registry.url + "/skills/git-workflow")
    button = browser.find_element(By.CSS_SELECTOR, "button[data-copy='install-strawpot']")
    assert button.is_displayed()  # hidden in the HTML; the script shows it
    button.click()
    status = browser.find_element(By.CSS_SELECTOR, ".copy-status")
    wait(browser).until(lambda _: status.text)
    assert status.text == "Copied: strawpot install skill git-workflow"
    box = browser.find_element(By.ID, "q")
    box.click()
    box.send_keys(Keys.CONTROL, "v")
    assert box.get_attribute("value") == "strawpot install skill git-workflow"
    save_screenshot(browser, "copied")


def test_a_hostile_readme_runs_nothing(browser: webdriver.Chrome, registry: LiveRegistry) -> None:
    console_errors(browser)  # drop what earlier pages logged
    browser.get(registry.url + "/skills/xss-probe")
    wait(browser).until(lambda d: d.execute_script("return document.readyState") == "complete")
    time.sleep(0.3)  # an onerror or a script would have fired by now
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert  # noqa: B018 - the property raises when no dialog is open
    body = browser.find_element(By.CSS_SELECTOR, "section.body")
    assert "<script>alert(1)</script>" in body.text and "<img src=x onerror=alert(2)>" in body.text
    assert "[x](javascript:alert(3))" in body.text
    assert body.find_elements(By.CSS_SELECTOR, "script, img, iframe, [onerror], a[href^='javascript:']") == []
    scripts = [s.get_attribute("src") for s in browser.find_elements(By.TAG_NAME, "script")]
    assert len(scripts) == 1 and "/static/copy.js" in scripts[0]
    assert console_errors(browser) == []
    save_screenshot(browser, "hostile")
    # The CSP is in force: an inline script added now is refused, and the refusal is logged.
    ran = browser.execute_script(
        "const s = document.createElement('script'); s.textContent = 'window.ranInline = 1';"
        "document.body.appendChild(s); return window.ranInline === 1;")
    assert ran is False
    assert any("Content Security Policy" in message for message in console_errors(browser))
    assert httpx.get(registry.url + "/skills/xss-probe", headers={"Accept": "text/html"}).headers[
        "content-security-policy"] == CSP


def test_pages_work_without_javascript(browser: webdriver.Chrome, registry: LiveRegistry) -> None:
    browser.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
    try:
        browser.get(registry.url + "/")
        box = browser.find_element(By.ID, "q")
        box.send_keys("git", Keys.ENTER)
        wait(browser).until(ec.url_contains("/search?q=git"))
        browser.find_element(By.LINK_TEXT, "git-workflow").click()
        wait(browser).until(ec.url_to_be(registry.url + "/skills/git-workflow"))
        assert browser.find_element(By.ID, "install-strawpot").text == "strawpot install skill git-workflow"
        assert not browser.find_element(By.CSS_SELECTOR, "button[data-copy]").is_displayed()
        save_screenshot(browser, "package-without-js")
    finally:
        browser.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": False})
