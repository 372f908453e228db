"""Headless Chromium for the browser tests: the one ``dev.py test`` found or installed, and the
steps the admin tests share. The ``open_page`` fixture (conftest.py) is the way in.

``dev.py test`` sets ``LEASEQUEUE_CHROMIUM``; run directly, pytest falls back to a system
Chromium, then to Playwright's own browser.
"""

import os
import shutil
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from playwright.sync_api import Browser, Error, Page, Playwright

from tests.support.permissions import APP_LABELS

# Without the background-networking flags Chromium keeps dialling hosts a closed network refuses.
_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def launch_chromium(playwright: Playwright) -> Browser:
    executable = os.environ.get("LEASEQUEUE_CHROMIUM") or shutil.which("chromium")
    try:
        return playwright.chromium.launch(executable_path=executable, args=_ARGS)
    except Error as exc:
        pytest.fail(f"No Chromium to launch ({exc}); run the tests with `python3 dev.py test`.")


def make_operator(*codenames: str) -> None:
    """The staff member the browser tests sign in as, with these leasequeue permissions (create
    it before Playwright starts: see the ``open_page`` fixture)."""
    user = get_user_model().objects.create_user("operator", password="night-shift", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label__in=APP_LABELS, codename__in=codenames)
    )


def log_in(page: Page, base_url: str, next_path: str = "/admin/leasequeue/job/") -> None:
    """Sign in to the admin as ``make_operator``'s operator, and wait until ``next_path`` has
    loaded."""
    page.goto(f"{base_url}/admin/login/?next={next_path}")
    page.fill("#id_username", "operator")
    page.fill("#id_password", "night-shift")
    page.click("input[type=submit]")
    page.wait_for_url(f"{base_url}{next_path}")


# Set to 1 to write the screenshots a browser test takes into docs/screenshots/ (the docs' own);
# otherwise they go to the test's temporary directory, leaving the committed images alone.
UPDATE_SCREENSHOTS = "LEASEQUEUE_UPDATE_SCREENSHOTS"
DOCS_SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def screenshot_path(name: str, tmp_path: Path) -> Path:
    """Where a test saves the screenshot ``name`` (see ``UPDATE_SCREENSHOTS``)."""
    folder = DOCS_SCREENSHOTS if os.environ.get(UPDATE_SCREENSHOTS) == "1" else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name
