from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest
from django.db import connection
from playwright.sync_api import Browser, Page, sync_playwright

from devtools.pgbouncer import INSTALL_HINT, ensure_pgbouncer
from tests.acceptance.browser import launch_chromium
from tests.acceptance.harness import Workers
from tests.support.servers import PgBouncerServer

# How long a test's workers get to stop gracefully at teardown before they are killed. A worker
# with a long job in flight waits its grace (30 s) for it; the test is over, so nothing is lost.
_TEARDOWN_STOP_SECONDS = 5


@pytest.fixture
def start_workers(tmp_path, request):
    """Start ``runworkers`` processes; all are stopped (and their logs shown on failure) after."""
    started: list[Workers] = []

    def start(*args: str, **kwargs) -> Workers:
        workers = Workers(*args, log_path=tmp_path / f"workers-{len(started)}.log", **kwargs)
        started.append(workers)
        return workers

    yield start
    for workers in started:
        workers.stop(timeout=_TEARDOWN_STOP_SECONDS)
    if request.node.rep_call.failed if hasattr(request.node, "rep_call") else False:
        for workers in started:
            print(f"--- {workers.log_path} ---\n{workers.log()[-5000:]}")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture
def pgbouncer():
    """A PgBouncer in transaction pooling mode in front of the test database, and its URL."""
    binary = ensure_pgbouncer()
    if binary is None:
        pytest.skip(f"PgBouncer is not installed and could not be installed: {INSTALL_HINT}")
    db = connection.settings_dict
    server = PgBouncerServer(binary, (db["HOST"], int(db["PORT"]))).start()
    yield server, server.url(db["NAME"])
    server.stop()


@pytest.fixture
def open_page() -> Iterator[Callable[..., Page]]:
    """Opens a page in headless Chromium when called, each in a browser context of its own;
    everything is closed after the test.

    Chromium starts at the first call, not before: Playwright's sync API runs an event loop in
    the test's thread, where Django then refuses database access. So use the ORM first, or on a
    thread of its own (``tests.support.helpers.run_in_threads``).

    ``admin_sidebar``: open or fold the admin's navigation sidebar (folded, the job list gets
    the width); other keywords go to ``Browser.new_context`` (``viewport``, ``reduced_motion``).
    """
    with ExitStack() as stack:
        browser: Browser | None = None

        def open_page(*, admin_sidebar: bool | None = None, **context_options) -> Page:
            nonlocal browser
            if browser is None:
                browser = launch_chromium(stack.enter_context(sync_playwright()))
                stack.callback(browser.close)
            context = browser.new_context(**context_options)
            if admin_sidebar is not None:
                is_open = "true" if admin_sidebar else "false"
                context.add_init_script(
                    f"localStorage.setItem('django.admin.navSidebarIsOpen', '{is_open}')"
                )
            context.set_default_timeout(15_000)
            return context.new_page()

        yield open_page
