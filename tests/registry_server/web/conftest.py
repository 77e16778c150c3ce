"""The web pages' browser: one headless Chromium per test module, with a profile of its own."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from selenium import webdriver

from tests.registry_server.web._browser import start_chromium


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[webdriver.Chrome]:
    profile = tmp_path_factory.mktemp("chromium-profile")
    driver = start_chromium(profile)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
