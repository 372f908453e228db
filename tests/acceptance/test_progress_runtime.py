"""Progress and checkpoints through the task context, with real ``runworkers`` processes.

Progress events are watched the way a browser watches them: through the websocket consumer and
the channels-redis layer the worker publishes to. Database writes of ``progress`` are counted by
a trigger, so throttling is measured where it matters.
"""

import json
import os
import signal
from collections.abc import Iterator

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connection

from django_leasequeue.models import Job
from django_leasequeue.progress.access import job_token
from tests.acceptance.harness import wait_until
from tests.support.asgi import application
from tests.support.tasks.progress import (
    aresume_after_crash,
    atight_loop,
    report_until_refused,
    resume_after_crash,
    tight_loop,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

PROGRESS_INTERVAL = 0.25  # the backend's default progress_interval_seconds


@pytest.fixture
def progress_writes() -> Iterator[callable]:
    """Counts the UPDATEs that change a job's ``progress`` column, whoever makes them."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            CREATE TABLE lqtest_progress_writes (job_id uuid NOT NULL);
            CREATE FUNCTION lqtest_count_progress() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO lqtest_progress_writes VALUES (NEW.id);
                RETURN NEW;
            END $$;
            CREATE TRIGGER lqtest_count_progress AFTER UPDATE OF progress ON leasequeue_job
            FOR EACH ROW EXECUTE FUNCTION lqtest_count_progress();
            """
        )

    def count(job_id) -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM lqtest_progress_writes WHERE job_id = %s", [job_id]
            )
            return cursor.fetchone()[0]

    yield count
    with connection.cursor() as cursor:
        cursor.execute(
            "DROP TRIGGER lqtest_count_progress ON leasequeue_job;"
            "DROP FUNCTION lqtest_count_progress(); DROP TABLE lqtest_progress_writes;"
        )


async def _watch_until_final(job_id, timeout: float = 60) -> list[dict]:
    """Everything the job's websocket pushes, from the snapshot to the final state."""
    socket = WebsocketCommunicator(
        application, f"/ws/leasequeue/jobs/{job_id}/?token={job_token(job_id)}"
    )
    connected, _ = await socket.connect()
    assert connected
    messages = [await socket.receive_json_from(timeout=timeout)]
    while messages[-1]["kind"] != "final":
        messages.append(await socket.receive_json_from(timeout=timeout))
    assert (await socket.receive_output(timeout=3))["type"] == "websocket.close"
    return messages


@pytest.mark.parametrize("loop_task", [tight_loop, atight_loop], ids=["sync", "async"])
async def test_a_tight_progress_loop_is_throttled_and_its_last_report_lands(
    loop_task, start_workers, progress_writes
):
    reports = 20000
    job_id = (await database_sync_to_async(loop_task.enqueue)(reports)).id
    watching = _watch_until_final(job_id)
    await database_sync_to_async(start_workers)("--concurrency", "1")
    messages = await watching

    job = await database_sync_to_async(Job.objects.get)(pk=job_id)
    assert job.status == "succeeded"
    seconds = job.result
    writes = await database_sync_to_async(progress_writes)(job_id)
    progress = [m for m in messages if m["kind"] == "progress"]
    allowed = seconds / PROGRESS_INTERVAL + 2  # one per interval, plus the first and the last
    print(f"{loop_task.name}: {reports} reports in {seconds:.2f}s -> {writes} writes")
    assert 1 <= writes <= allowed
    # The worker learns within a second that a page follows the job, then publishes the latest
    # persisted report and every one after it: never more than it persisted. A job shorter
    # than that publishes none, and the page's final state carries the last report.
    assert len(progress) <= writes
    last = {
        "kind": "progress",
        "current": reports,
        "total": reports,
        "message": f"report {reports}",
    }
    assert progress[-1:] in ([], [last])
    assert (messages[-1]["kind"], messages[-1]["current"]) == ("final", reports)
    assert (job.progress["current"], job.progress["message"]) == (reports, f"report {reports}")
    statuses = [m["status"] for m in messages if m["kind"] == "status"]
    assert statuses in ([], ["running"], ["running", "succeeded"])
    assert (messages[-1]["status"], messages[-1]["percent"]) == ("succeeded", 100)


def test_a_worker_that_lost_its_lease_writes_no_more_progress(start_workers, tmp_path):
    verdict = tmp_path / "verdict.json"
    job_id = report_until_refused.enqueue(str(verdict)).id
    start_workers("--concurrency", "1", options={"lease_seconds": 30, "heartbeat_seconds": 5})
    wait_until(
        lambda: (Job.objects.get(pk=job_id).progress or {}).get("current", 0) >= 3,
        30,
        "the task to report progress",
    )
    # Another worker takes the job over: new lease version, and it reports its own progress.
    with connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE leasequeue_job
            SET lease_version = lease_version + 1, worker_id = 'new-owner',
                lease_expires_at = now() + interval '1 hour',
                progress = '{"current": 1, "total": 10, "message": "new owner"}'
            WHERE id = %s
            """,
            [job_id],
        )
    wait_until(verdict.exists, 10, "the stale worker to notice")

    assert json.loads(verdict.read_text())["lease_lost"] is True
    job = Job.objects.get(pk=job_id)
    assert (job.status, job.worker_id, job.progress["message"]) == (
        "running",
        "new-owner",
        "new owner",
    )


@pytest.mark.parametrize(
    "crash_task", [resume_after_crash, aresume_after_crash], ids=["sync", "async"]
)
def test_a_checkpoint_survives_kill_9_and_the_next_attempt_resumes_from_it(
    crash_task, start_workers
):
    job_id = crash_task.enqueue().id
    workers = start_workers("--concurrency", "1")
    wait_until(
        lambda: Job.objects.get(pk=job_id).checkpoint is not None, 30, "the first checkpoint"
    )
    victim = Job.objects.get(pk=job_id).checkpoint["pid"]
    assert victim in workers.children()
    os.kill(victim, signal.SIGKILL)

    wait_until(lambda: Job.objects.get(pk=job_id).status == "succeeded", 30, "the next attempt")
    job = Job.objects.get(pk=job_id)
    assert job.result == {"resumed_from": {"done": 3, "pid": victim}, "attempt": 2}
    assert [error["exception_class_path"] for error in job.errors] == [
        "django_leasequeue.exceptions.LeaseExpired"
    ]
    assert job.progress["message"] == "checkpointed"
