"""The viewer watch: which of the worker's running jobs a browser page follows live (the job's
own page, or its workflow's), asked of Redis once a second for all of them (no round trip per
claim). Only followed jobs publish their progress; a job that gains a viewer publishes its
state at once, so the page catches up, and the page's own database checks cover what happens
in between."""

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor

from redis.exceptions import RedisError

from django_leasequeue.runtime.job_handle import JobHandle
from django_leasequeue.wakeups import Wakeups

# How often the worker asks Redis which of its running jobs a browser page follows live.
REFRESH_SECONDS = 1.0


class ViewerWatch:
    def __init__(
        self,
        wakeups: Wakeups,
        redis_calls: ThreadPoolExecutor,
        in_flight: dict[uuid.UUID, JobHandle],
    ) -> None:
        self.wakeups = wakeups
        self.redis_calls = redis_calls
        self.in_flight = in_flight

    async def run(self) -> None:
        if not self.wakeups.enabled:
            return
        while True:
            await asyncio.sleep(REFRESH_SECONDS)
            await self.refresh()

    async def refresh(self) -> None:
        """Mark each running job watched or not (itself, and through its workflow); keep the
        last answer when Redis fails."""
        handles = list(self.in_flight.values())
        if not handles:
            return
        ids = [str(handle.job.id) for handle in handles]
        workflows = [str(handle.job.workflow_id) for handle in handles if handle.job.workflow_id]
        try:
            watched = await asyncio.get_running_loop().run_in_executor(
                self.redis_calls, self.wakeups.watched, [*ids, *dict.fromkeys(workflows)]
            )
        except RedisError:
            return
        for handle, job_id in zip(handles, ids, strict=True):
            workflow_watched = str(handle.job.workflow_id) in watched
            newly_watched = (not handle.watched and job_id in watched) or (
                not handle.workflow_watched and workflow_watched
            )
            handle.watched = job_id in watched
            handle.workflow_watched = workflow_watched
            if newly_watched:
                await handle.publish_state()
