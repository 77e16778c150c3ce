"""Headless Debian Chromium driven by Selenium (no Selenium Manager, nothing downloaded), and screenshots.

    driver = start_chromium(tmp_path)      # /usr/bin/chromium through /usr/bin/chromedriver
    save_screenshot(driver, "home")        # test-artifacts/screenshots/home.png
"""

from __future__ import annotations

from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SCREENSHOTS = Path(__file__).resolve().parents[3] / "test-artifacts" / "screenshots"
FLAGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
    "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--window-size=1280,1000",
)


def start_chromium(profile: Path) -> webdriver.Chrome:
    """A fresh headless browser with its own profile; its console is kept for `get_log("browser")`."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.is_file()]
    assert not missing, f"missing {missing}: run `bash scripts/bootstrap.sh --test-tools` (it installs chromium and chromium-driver)"
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # A driver path given to Service means Selenium Manager is never run (so it never reaches the network).
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(20)
    return driver


def save_screenshot(driver: webdriver.Chrome, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    assert driver.save_screenshot(str(path)), path
    return path
