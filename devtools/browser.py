"""A Chromium for the browser tests, found or installed without asking anyone.

In this order: a browser Playwright already has; a system Chromium; Debian's ``chromium``
package through apt-get when running as root; Playwright's own download (``python -m
playwright install chromium``, where its site is reachable). Otherwise stop with the one
command to run.
"""

import os
import shutil
import subprocess
from pathlib import Path

from devtools import apt

# The environment variable that tells the tests which browser to launch.
ENV_VAR = "LEASEQUEUE_CHROMIUM"
_SYSTEM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_PLAYWRIGHT_INSTALL_TIMEOUT = 300
_PURPOSE = "a browser for the browser tests"


def _playwright_browser(python: Path) -> str | None:
    """The Chromium Playwright downloaded earlier, if it is on disk."""
    script = (
        "from playwright.sync_api import sync_playwright\n"
        "with sync_playwright() as p: print(p.chromium.executable_path)"
    )
    done = subprocess.run([python, "-c", script], capture_output=True, text=True)
    path = done.stdout.strip()
    return path if done.returncode == 0 and path and Path(path).exists() else None


def _system_browser() -> str | None:
    for name in _SYSTEM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def ensure_chromium(python: Path) -> str:
    """The path of a Chromium the tests can launch, installing one when there is none."""
    found = os.environ.get(ENV_VAR) or _playwright_browser(python) or _system_browser()
    if found:
        return found
    # The distribution's package first: Playwright's own download may be unreachable (it is on
    # some build machines), and then it costs its timeout before anything else is tried.
    if apt.install("chromium", _PURPOSE):
        found = _system_browser()
    download = [python, "-m", "playwright", "install", "chromium"]
    if not found and apt.run_quietly(download, _PURPOSE, _PLAYWRIGHT_INSTALL_TIMEOUT):
        found = _playwright_browser(python)
    if not found:
        raise SystemExit(
            "The browser tests need Chromium and none could be installed. Run one of:\n"
            "  sudo apt-get install chromium          # Debian, Ubuntu\n"
            f"  {python} -m playwright install chromium   # elsewhere\n"
            f"or point {ENV_VAR} at a Chromium or Chrome binary."
        )
    return found
