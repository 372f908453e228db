"""Headless Debian Chromium for the browser tests (Playwright's own download does not work here)."""

from pathlib import Path

import pytest
from playwright.sync_api import Browser, Playwright

CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps dialling hosts a closed network refuses.
_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def launch_chromium(playwright: Playwright) -> Browser:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium package.")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=_ARGS)
