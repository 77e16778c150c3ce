"""A package page at 1280 px wide never scrolls sideways (headless Chromium against a live registry), whatever
the package holds: the longest slug, an unbroken install command, a long `pre` block, a wide table."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from hub_client import HubClient
from resolver.requirement import SLUG_MAX_LENGTH
from strawpot.publishing.prepare import prepare_upload
from tests._live_registry import LiveRegistry, start_registry
from tests.registry_server.web._browser import save_screenshot

SLUG = ("a-very-long-agent-name-that-goes-on-" + "x" * SLUG_MAX_LENGTH)[:SLUG_MAX_LENGTH]
SCRIPT = "curl -fsSL https://downloads.example.com/" + "release-artifacts/" * 12 + "install.sh|sh"
WORD = "Unbroken" * 40
AGENT_MD = f"""---
name: {SLUG}
version: 1.0.0
description: An agent whose every field is as long as it gets.
metadata:
  strawpot:
    bin:
      linux: bin/wrapper
    install:
      linux: {SCRIPT}
    tools:
      {WORD.lower()[:60]}:
        description: {WORD}
        install:
          linux: {SCRIPT}
    params:
      {WORD.lower()[:60]}:
        default: {WORD}
        description: {WORD}
---

# {WORD}

Install it by hand: `{SCRIPT}`, or read {WORD}.

```sh
{SCRIPT} && {SCRIPT}
```

| {WORD} | column | {WORD} |
|---|---|---|
| {SCRIPT} | b | {WORD} |
"""


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveRegistry]:
    work = tmp_path_factory.mktemp("width")
    folder = work / SLUG
    (folder / "bin").mkdir(parents=True)
    (folder / "AGENT.md").write_text(AGENT_MD, encoding="utf-8")
    (folder / "bin" / "wrapper").write_text("#!/bin/sh\n", encoding="utf-8")
    with start_registry(work / "data") as live:
        upload = prepare_upload(folder)
        HubClient(live.url, token=live.token).publish(
            upload.kind.value, upload.fields, [(f.path, f.data) for f in upload.files])
        yield live


@pytest.mark.parametrize("width", [1280, 800])
def test_the_package_page_fits_the_window(browser: webdriver.Chrome, registry: LiveRegistry, width: int) -> None:
    browser.set_window_size(width, 1000)
    browser.get(f"{registry.url}/agents/{SLUG}")
    assert browser.find_element(By.ID, "install-strawpot").text == f"strawpot install agent {SLUG}"
    aside = browser.find_element(By.TAG_NAME, "aside").text
    assert SCRIPT in aside.replace("\n", "")  # the long command is on the page, wrapped or not
    assert browser.execute_script("return window.innerWidth") == width
    scroll, inner = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    save_screenshot(browser, f"package-long-names-{width}")
    assert scroll <= inner, f"the page is {scroll} px wide in a {inner} px window"


@pytest.mark.parametrize("page", ["/search?q=very-long", "/users/admin", "/"])
def test_the_lists_of_a_long_named_package_fit_too(browser: webdriver.Chrome, registry: LiveRegistry, page: str) -> None:
    browser.set_window_size(1280, 1000)
    browser.get(registry.url + page)
    assert SLUG in browser.find_element(By.TAG_NAME, "main").text.replace("\n", "")
    scroll, inner = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    assert scroll <= inner, f"{page} is {scroll} px wide in a {inner} px window"
