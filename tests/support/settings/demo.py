"""The test project serving the demo site's pages (``example_project.urls``), for the browser
test of its import workflow."""

from tests.support.settings import *  # noqa: F403

ROOT_URLCONF = "example_project.urls"
LOGIN_URL = "login"
