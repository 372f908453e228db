"""An interrupted test run does not break the next one (tests/support/processes.py,
tests/support/leftovers.py): the processes a test starts die with it, SIGTERM ends a run with
its teardown, and a run cleans up what a killed one left behind, saying so."""

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from tests.acceptance import harness
from tests.acceptance.harness import ROOT, wait_until
from tests.support.processes import popen_options

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.django_independent]

# Started the way a test starts its workers (harness.Workers), in a process then SIGKILLed.
STARTS_WORKERS = """
import json, sys, time
from pathlib import Path
import django
django.setup()
from tests.acceptance.harness import Workers
workers = Workers("--processes", "2", database_url=sys.argv[1], log_path=Path(sys.argv[2]))
print(json.dumps([workers.process.pid, *workers.wait_for_children(2)]), flush=True)
time.sleep(600)
"""


def _gone(pid: int) -> bool:
    """Ended (a zombie waiting for its new parent to reap it counts as ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _env(**extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.support.settings",
        "PYTHONPATH": str(ROOT),
    } | extra


def test_the_workers_a_test_started_die_when_the_test_process_is_killed(tmp_path):
    command = [
        sys.executable,
        "-c",
        STARTS_WORKERS,
        harness.test_database_url(),
        tmp_path / "workers.log",
    ]
    parent = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, **popen_options(_env()))
    pids = json.loads(parent.stdout.readline())
    try:
        assert len(pids) == 3 and not any(map(_gone, pids))  # the supervisor and two workers
        parent.kill()
        parent.wait()
        wait_until(lambda: all(map(_gone, pids)), 20, "the workers to die with their test process")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pids[0], signal.SIGKILL)  # what a failure would leave


def test_the_worker_processes_of_a_test_die_when_their_supervisor_is_killed(start_workers):
    workers = start_workers("--processes", "2")
    children = workers.wait_for_children(2)
    os.kill(workers.process.pid, signal.SIGKILL)  # the supervisor alone
    wait_until(lambda: all(map(_gone, children)), 20, "the workers to die with their supervisor")


class InnerRun:
    """``pytest interrupted_run_sample.py`` on a database of its own, whose test waits with
    workers running."""

    def __init__(self, directory: Path, wait_seconds: float) -> None:
        directory.mkdir()
        self.base = f"{connection.settings_dict['NAME']}_inner"
        self.ready = directory / "ready.json"
        database_url = harness.test_database_url().rsplit("/", 1)[0] + f"/{self.base}"
        env = _env(
            DATABASE_URL=database_url,
            LEASEQUEUE_TEST_KEY_PREFIX=f"{settings.KEY_PREFIX}-inner",
            LEASEQUEUE_SAMPLE_READY=str(self.ready),
            LEASEQUEUE_SAMPLE_WAIT=str(wait_seconds),
        )
        env.pop("PYTEST_XDIST_WORKER", None)  # not one of the outer run's workers
        sample = "tests/acceptance/interrupted_run_sample.py"
        self.output = directory / "pytest.log"
        with open(self.output, "ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", sample],
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                **popen_options(env),
            )

    def wait_for_its_workers(self) -> dict:
        wait_until(self.ready.exists, 60, "the inner run's workers")
        return json.loads(self.ready.read_text())

    def log(self) -> str:
        return self.output.read_text(errors="replace")


@pytest.fixture
def stop_after():
    """Kills the processes handed to it at teardown: what a failing test would leave running."""
    processes: list[subprocess.Popen] = []
    yield processes.append
    for process in processes:
        process.kill()
        process.wait()


def _databases() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT datname FROM pg_database")
        return {name for (name,) in cursor.fetchall()}


def test_sigterm_ends_a_run_with_its_teardown_and_a_run_cleans_up_after_a_killed_one(
    tmp_path, stop_after
):
    # SIGTERM: the run ends as on Ctrl-C; its teardown stops the workers and drops the database.
    run = InnerRun(tmp_path / "terminated", wait_seconds=600)
    stop_after(run.process)
    ready = run.wait_for_its_workers()
    run.process.send_signal(signal.SIGTERM)
    # The teardown (stopping the workers, dropping the database) outlasted 60 s under a CPU hog
    # on every core; what matters is that it ends, interrupted, with everything cleaned up.
    assert run.process.wait(180) == pytest.ExitCode.INTERRUPTED, run.log()
    assert "stopped by signal SIGTERM" in run.log()
    assert all(map(_gone, ready["pids"]))
    assert ready["database"] not in _databases()

    # SIGKILL: no teardown; the workers die with the run, the database stays.
    run = InnerRun(tmp_path / "killed", wait_seconds=600)
    stop_after(run.process)
    ready = run.wait_for_its_workers()
    run.process.kill()
    run.process.wait()
    wait_until(lambda: all(map(_gone, ready["pids"])), 20, "the workers to die with the run")
    assert ready["database"] in _databases()
    # A process that did not die with it (no parent-death signal: not on Linux, or started
    # by an older checkout), still on its test database.
    straggler = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        env={**os.environ, "DATABASE_URL": f"postgres://127.0.0.1/{ready['database']}"},
    )
    stop_after(straggler)

    # The next run ends both, says so, and passes.
    run = InnerRun(tmp_path / "next", wait_seconds=0)
    stop_after(run.process)
    assert run.process.wait(120) == pytest.ExitCode.OK, run.log()
    assert straggler.wait(10) == -signal.SIGKILL
    log = run.log()
    left = "that an earlier run left behind"
    assert f"Stopped 1 process(es) {left} (pids {straggler.pid})" in log
    assert f"Dropped 1 test database(s) {left}: ['{ready['database']}']" in log
    assert ready["database"] not in _databases()
