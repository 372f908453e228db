import pytest

from tests.acceptance.harness import Workers


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
