"""The worker's services against the real PostgreSQL and Redis, each on its own: the recover
sweep (runtime/recover.py) and the viewer watch (runtime/watch.py)."""

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from django_leasequeue.models import Job
from django_leasequeue.runtime.watch import ViewerWatch
from tests.support.helpers import claim_one, recover_sweep, running_handle
from tests.support.tasks.basic import add

pytestmark = pytest.mark.django_db(transaction=True)


def _claimed_with_expired_lease(queue: str = "default") -> str:
    try:
        job_id = add.using(queue_name=queue).enqueue(1, 2).id
        claim_one(job_id, "gone", lease_seconds=0.001)
        return job_id
    finally:
        connections.close_all()


async def test_the_sweep_puts_an_expired_lease_back_and_wakes_workers_for_it(backend, redis_client):
    job_id = await sync_to_async(_claimed_with_expired_lease)()
    async with recover_sweep(backend, wakeups_usable=True) as sweep:
        await sweep.sweep_once()
    job = await Job.objects.aget(pk=job_id)
    assert (job.status, job.attempt) == ("retrying", 1)
    assert "Lease expired" in job.errors[-1]["message"]


async def test_the_watch_marks_followed_jobs_and_a_newly_followed_one_publishes_its_state(
    backend, redis_client
):
    followed, unfollowed = running_handle(deadline=1e9), running_handle(deadline=1e9)
    events = []

    async def publish(job_id: uuid.UUID, event: dict) -> None:
        events.append((job_id, event["kind"]))

    for handle in (followed, unfollowed):
        handle._publish = publish
    backend.wakeups.join([backend.wakeups.watch_key(str(followed.job.id))], "a-page", 60)
    redis_calls = ThreadPoolExecutor(1)
    watch = ViewerWatch(backend.wakeups, redis_calls, {h.job.id: h for h in (followed, unfollowed)})
    try:
        await watch.refresh()
        await watch.refresh()  # already followed: nothing new to publish
    finally:
        redis_calls.shutdown()
    assert (followed.watched, unfollowed.watched) == (True, False)
    assert events == [(followed.job.id, "status")]
