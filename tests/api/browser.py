"""Headless Debian ``chromium`` driven by Selenium, for the page's test and screenshots.

The browser and its driver are the system's (``apt-get install chromium
chromium-driver``; ``scripts/bootstrap.sh test`` does so as root), given to Selenium by
path, so Selenium Manager never runs and nothing is downloaded (``SE_OFFLINE`` too).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from selenium.webdriver.chrome.webdriver import WebDriver

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


def missing() -> str | None:
    """Why no browser can run here (chromium or its driver absent); None when one can.
    Selenium is in the test extra: without it the test fails, it is not skipped."""
    absent = [
        name
        for name, path in (("chromium", CHROMIUM), ("chromedriver (chromium-driver)", CHROMEDRIVER))
        if path is None
    ]
    if absent:
        return f"needs {', '.join(absent)}: apt-get install chromium chromium-driver"
    return None


def headless_chromium(profile: Path, width: int = 1000, height: int = 900) -> WebDriver:
    """A headless chromium with a fresh profile under ``profile``."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert CHROMIUM is not None and CHROMEDRIVER is not None, missing()
    os.environ["SE_OFFLINE"] = "true"  # never Selenium Manager, never a download
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",  # containers run as root
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
    ):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
