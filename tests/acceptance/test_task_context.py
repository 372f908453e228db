"""The task context in a real worker: in an ``async def`` task, the plain methods that wait for
the database refuse to block the event loop, and the plain ``snooze()`` works as in a sync task
(docs/tasks.md, *The task context*). The sync tasks' use of them is tested with the features
themselves (progress, checkpoints, fenced writes, snoozes)."""

import pytest

from django_leasequeue.models import Job
from tests.acceptance.harness import wait_until
from tests.support.tasks import context as context_tasks

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_async_task_s_plain_progress_checkpoint_and_fenced_atomic_raise_but_snooze_works(
    start_workers,
):
    job_id = context_tasks.calls_the_plain_methods_on_the_loop.enqueue().id
    start_workers("--queues", "*")
    wait_until(
        lambda: Job.objects.get(pk=job_id).status in {"succeeded", "failed"}, 30, "the job to end"
    )
    job = Job.objects.get(pk=job_id)
    assert (job.status, job.errors) == ("succeeded", [])
    assert job.result == {
        "progress": "RuntimeError",
        "checkpoint": "RuntimeError",
        "fenced_atomic": "SynchronousOnlyOperation",
    }
    # The refused calls wrote nothing; the snooze ended the first run without counting it.
    assert job.progress is None
    assert (job.snoozes, job.attempt) == (1, 1)
