"""The worker's services, each on its own (runtime/claimer.py, heartbeat.py): the parts with
logic of their own that need no database."""

import asyncio
import uuid

from django_leasequeue.runtime.claimer import DroppedWakeups, job_ids
from django_leasequeue.runtime.heartbeat import Heartbeat, fence_margin
from django_leasequeue.runtime.job_handle import StopReason
from tests.support.helpers import running_handle


def test_popped_wakeups_keep_job_ids_and_count_garbage(caplog):
    ids = [uuid.uuid4(), uuid.uuid4()]
    garbage = DroppedWakeups()
    raw = [str(ids[0]).encode(), b"not-a-uuid", b"\xff\xfe", str(ids[1]).encode(), 42]
    popped = job_ids(raw, garbage)
    assert popped.ids == ids
    assert popped.count == 5  # garbage counts as popped: it woke the claimer
    assert "Dropped 1 wakeup(s) that are not job ids (latest: b'not-a-uuid')" in caplog.text
    assert caplog.text.count("Dropped") == 1  # one line per interval, not one per item


def test_the_fence_margin_is_a_tenth_of_the_lease_and_at_least_a_fifth_of_a_second():
    assert fence_margin(30) == 3.0
    assert fence_margin(1.5) == 0.2
    beat = Heartbeat(None, {}, lease_seconds=30, heartbeat_seconds=10, on_tick=print)
    assert beat.deadline(100.0) == 127.0  # sent at 100: the lease ends at 130, less the margin


async def test_jobs_past_their_own_deadline_stop_as_lease_lost_and_the_others_run_on():
    late, on_time = running_handle(deadline=10.0), running_handle(deadline=20.0)
    running = {late.job.id: late, on_time.job.id: on_time}
    beat = Heartbeat(None, running, lease_seconds=30, heartbeat_seconds=10, on_tick=print)
    runner = asyncio.create_task(asyncio.sleep(10))
    late.runner = runner
    beat.stop_expired(now=15.0)
    assert late.stop_reason == StopReason.LEASE_LOST
    assert on_time.stop_reason is None
    await asyncio.sleep(0)
    assert runner.cancelled()  # the job's coroutine was told to stop
