"""What the demo site's test modules share besides their fixtures (in this package's conftest):
the demo project's URLs and settings."""

from django.test import override_settings

# The demo project's URLs and login page, with a per-user cap small enough to reach.
demo_urls = override_settings(
    ROOT_URLCONF="example_project.urls", LOGIN_URL="login", MATCHING_MAX_UNFINISHED_JOBS=5
)
