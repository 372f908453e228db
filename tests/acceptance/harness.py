"""Real ``runworkers`` processes for the acceptance tests, pointed at the test database, and
the crash tests' workload: jobs that record every execution and commit a receipt."""

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from django.db import connections

from django_leasequeue.models import Job
from tests.support.models import Execution, Receipt
from tests.support.processes import popen_options
from tests.support.tasks.basic import recorded_work

ROOT = Path(__file__).resolve().parents[2]

# The environment of a process that reaches PostgreSQL through PgBouncer (docs/pgbouncer.md).
THROUGH_PGBOUNCER = {"DJANGO_SETTINGS_MODULE": "tests.support.settings.pgbouncer"}

# Short leases so that crash recovery happens within seconds.
FAST_OPTIONS = {
    "lease_seconds": 1.5,
    "heartbeat_seconds": 0.3,
    "sweep_seconds": 0.3,
    "poll_seconds": 0.3,
    "resignal_after_seconds": 1.0,
}
# For tests that count what each attempt did: a lease long enough that a stall of a loaded
# machine (Chromium, Daphne and three test processes on two cores; 2 s seen) does not expire
# it and start the job again, or make the worker stop it to fence itself. Crash recovery is
# tested with FAST_OPTIONS' leases.
LONG_LEASE = {"lease_seconds": 10.0}
# Jobs a browser test watches: progress written often, under a long lease.
LIVE_PROGRESS_OPTIONS = {**LONG_LEASE, "progress_interval_seconds": 0.1}


def test_database_url(alias: str = "default") -> str:
    settings = connections[alias].settings_dict
    auth = settings["USER"] + (f":{settings['PASSWORD']}" if settings["PASSWORD"] else "")
    return f"postgres://{auth}@{settings['HOST']}:{settings['PORT']}/{settings['NAME']}"


class Workers:
    """``manage.py runworkers`` in its own process group, logging to a file; it and its worker
    processes die with the test process (``tests/support/processes.py``)."""

    def __init__(
        self,
        *args: str,
        options: dict | None = None,
        redis_url: str | None = None,
        database_url: str | None = None,
        env: dict[str, str] | None = None,
        log_path: Path,
    ) -> None:
        env = {
            **os.environ,
            **(env or {}),
            "DJANGO_SETTINGS_MODULE": "tests.support.settings",
            "DATABASE_URL": database_url or test_database_url(),
            "LEASEQUEUE_OPTIONS": json.dumps({**FAST_OPTIONS, **(options or {})}),
            "PYTHONPATH": str(ROOT),
            **(env or {}),
        }
        if redis_url:
            env["REDIS_URL"] = redis_url
        self.log_path = log_path
        self._log = open(log_path, "ab")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "django", "runworkers", "-v", "1", *args],
            cwd=ROOT,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            **popen_options(env),
        )

    def children(self) -> list[int]:
        """Pids of the worker processes the supervisor runs now: its living children (a zombie's
        command line is empty) but multiprocessing's resource tracker."""
        path = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        try:
            pids = [int(pid) for pid in path.read_text().split()]
        except FileNotFoundError:
            return []
        return [pid for pid in pids if (line := _cmdline(pid)) and b"resource_tracker" not in line]

    def wait_for_children(self, count: int, timeout: float = 20) -> list[int]:
        wait_until(lambda: len(self.children()) >= count, timeout, f"{count} worker processes")
        return self.children()

    def signal(self, signum: int) -> None:
        self.process.send_signal(signum)

    def kill_all(self) -> None:
        """SIGKILL the supervisor and every worker: a machine losing power."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self, timeout: float = 30) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # stragglers of a killed supervisor
        self._log.close()
        return self.process.returncode

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def django_shell(database_url: str, code: str, **env: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh Django process on ``database_url`` (``manage.py shell -c``)."""
    return subprocess.run(
        [sys.executable, "-m", "django", "shell", "-c", code],
        cwd=ROOT,
        env=_shell_env(database_url, env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def start_django_shell(database_url: str, code: str, **env: str) -> subprocess.Popen:
    """``django_shell`` without waiting: several run at once (``communicate()`` for the output)."""
    return subprocess.Popen(
        [sys.executable, "-m", "django", "shell", "-c", code],
        cwd=ROOT,
        env=_shell_env(database_url, env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _shell_env(database_url: str, env: dict[str, str]) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.support.settings",
        "DATABASE_URL": database_url,
        "PYTHONPATH": str(ROOT),
        **env,
    }


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return b""


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"Timed out after {timeout}s waiting for {what}.")
        time.sleep(0.05)


# The crash tests' workload: each job records each execution (``Execution``) before it works,
# and writes its receipt and result in one fenced transaction (``Receipt``).


def enqueue_work(count: int, low_ms: int = 50, high_ms: int = 300) -> list[str]:
    backend = recorded_work.get_backend()
    calls = [(recorded_work, (n, random.randint(low_ms, high_ms)), {}) for n in range(count)]
    return [result.id for result in backend.enqueue_many(calls)]


def unfinished() -> int:
    return Job.objects.exclude(status__in=["succeeded", "failed", "cancelled"]).count()


def assert_every_job_committed_exactly_once(ids: list[str]) -> dict[str, int]:
    statuses = Counter(Job.objects.filter(pk__in=ids).values_list("status", flat=True))
    assert statuses == {"succeeded": len(ids)}, statuses
    receipts = Counter(str(job_id) for job_id in Receipt.objects.values_list("job_id", flat=True))
    assert set(receipts) == set(ids)
    assert set(receipts.values()) == {1}, "a job committed its business write twice"
    results = dict(Job.objects.filter(pk__in=ids).values_list("id", "result"))
    assert sorted(results.values()) == list(range(len(ids)))
    executions = Execution.objects.filter(job_id__in=ids).count()
    return {"jobs": len(ids), "executions": executions, "re-runs": executions - len(ids)}
