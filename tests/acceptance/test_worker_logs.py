"""What ``runworkers`` prints, read from real worker processes: each line once (also under
``DEBUG = True``), a cancel logged as a cancel, no redis-py noise at ``-v 2``."""

import json
import re
from uuid import UUID

import pytest
import redis

from django_leasequeue.models import Job
from tests.acceptance.harness import wait_until
from tests.support.settings import REDIS_URL
from tests.support.tasks.basic import add
from tests.support.tasks.progress import report_until_refused

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

# runworkers' format: "2026-11-29 17:40:01,123 INFO [worker 123] name: message".
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ")


def _lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if line.strip()]


def test_debug_true_prints_every_worker_line_once(start_workers):
    """Django's default logging adds a console handler to ``django`` when DEBUG is on; its
    records also reach runworkers' own handler on the root logger."""
    job_id = add.enqueue(1, 2).id
    workers = start_workers("--burst", "-v", "2", env={"LEASEQUEUE_TEST_DEBUG": "1"})
    assert workers.process.wait(60) == 0, workers.log()
    lines = _lines(workers.log())
    # Django's Tasks framework logs through the ``django`` logger: the line a duplicate hit.
    finished = [
        line
        for line in lines
        if f"Task id={job_id} path=tests.support.tasks.basic.add state=" in line
    ]
    assert len(finished) == 2, finished  # RUNNING, SUCCESSFUL: once each
    assert all(_TIMESTAMP.match(line) for line in finished), finished  # runworkers' format
    # A second handler prints in its own format: every line here is runworkers' own.
    assert [line for line in lines if not _TIMESTAMP.match(line)] == []
    assert "Burst: nothing due is left" in workers.log()


def test_v2_shows_no_redis_maintenance_notification_noise(start_workers):
    version = redis.Redis.from_url(REDIS_URL).info("server")["redis_version"]
    if int(version.split(".")[0]) >= 8:
        pytest.skip(f"Redis {version} knows MAINT_NOTIFICATIONS: redis-py says nothing to hide")
    workers = start_workers("-v", "2")  # not --burst: a burst leaves Redis alone
    job_id = add.enqueue(1, 2).id  # woken through Redis
    wait_until(lambda: Job.objects.get(pk=job_id).status == "succeeded", 20, "the job done")
    assert workers.stop() == 0
    log = workers.log()
    assert " DEBUG " in log and "wakeups=redis" in log  # -v 2, and Redis connections made
    assert "MAINT_NOTIFICATIONS" not in log and "maintenance notifications" not in log


def test_a_cancel_is_logged_as_a_cancel_at_info(start_workers, backend, tmp_path):
    """A sync task goes on after its cancel (a thread cannot be interrupted) and reports
    progress: that is no lost lease. At -v 2 Django's own receiver logs each finished job, and
    a cancelled one is FAILED to Django, which it would log at ERROR."""
    verdict = tmp_path / "verdict.json"
    job_id = report_until_refused.enqueue(str(verdict)).id
    workers = start_workers("-v", "2")
    wait_until(lambda: Job.objects.get(pk=job_id).status == "running", 20, "running")
    assert backend.cancel([job_id]) == {UUID(job_id): "cancel_requested"}
    wait_until(lambda: Job.objects.get(pk=job_id).status == "cancelled", 10, "cancelled")
    wait_until(verdict.exists, 10, "the task to see its progress refused")
    assert json.loads(verdict.read_text())["lease_lost"] is False
    assert workers.stop() == 0
    log = workers.log()
    cancelled = [line for line in _lines(log) if f"Job {job_id}" in line and "cancelled" in line]
    assert len(cancelled) == 1, log
    assert (
        " INFO " in cancelled[0]
        and "tests.support.tasks.progress.report_until_refused" in cancelled[0]
    )
    assert (
        f"Task id={job_id} path=tests.support.tasks.progress.report_until_refused state=RUNNING"
        in log
    )
    assert "lease lost" not in log
    assert " ERROR " not in log and "state=FAILED" not in log, log
