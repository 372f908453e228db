import pytest
from django.db import connection

from devtools.pgbouncer import INSTALL_HINT, ensure_pgbouncer
from tests.acceptance.harness import Workers
from tests.servers import PgBouncerServer


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
        workers.stop()
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
