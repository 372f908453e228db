"""What the worker does for workflow steps besides running them: a step reads its upstream
steps' results before it runs (passed first in its arguments for a chain or a chord, and as
``context.upstream_results``), and workers are woken for the steps a finished one released."""

import asyncio
import dataclasses
import json
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg

from django_leasequeue.choices import Upstream
from django_leasequeue.runtime.batching import Batcher
from django_leasequeue.runtime.database import Database
from django_leasequeue.sql import workflows as workflows_sql
from django_leasequeue.sql.records import ClaimedJob
from django_leasequeue.sql.statement import Row
from django_leasequeue.wakeups import Wakeups

logger = logging.getLogger(__name__)


async def with_upstream(db: Database, job: ClaimedJob) -> tuple[ClaimedJob, dict[str, Any]]:
    """The job with its upstream results put first in its arguments when its step asks for
    them (a chain: the one parent's return value; a chord: the list of them, in order), and
    ``{upstream step name: return value}`` of its direct parents."""
    return upstream_applied(job, await db.run(workflows_sql.upstream_results(job.id)))


def upstream_applied(job: ClaimedJob, rows: list[Row]) -> tuple[ClaimedJob, dict[str, Any]]:
    """``with_upstream`` of the rows ``upstream_results`` read for the job."""
    values = [None if row["result"] is None else json.loads(row["result"]) for row in rows]
    upstream = {row["step_name"]: value for row, value in zip(rows, values, strict=True)}
    if job.upstream == Upstream.CHAIN:
        job = dataclasses.replace(job, args=[values[0] if values else None, *job.args])
    elif job.upstream == Upstream.CHORD:
        job = dataclasses.replace(job, args=[values, *job.args])
    return job, upstream


class ReleasedStepsWaker(Batcher[uuid.UUID | tuple[str, str]]):
    """Once finished steps have committed, wakes workers for the steps they released: one
    query and one Redis push per batch, however many there are. An item is a finished step
    whose released steps are to be looked up, or a released step already known, (queue, job
    id), as a batch of completions returns them (``complete_steps``)."""

    def __init__(self, db: Database, wakeups: Wakeups, redis_calls: ThreadPoolExecutor) -> None:
        super().__init__()
        self._db = db
        self._wakeups = wakeups
        self._redis_calls = redis_calls

    def add_released(self, released: list[tuple[str, str]]) -> None:
        """Wake workers for these released steps (committed already), without a lookup."""
        for queue_and_id in released:
            self.add(queue_and_id)

    async def process(self, batch: list[uuid.UUID | tuple[str, str]]) -> None:
        finished = [item for item in batch if isinstance(item, uuid.UUID)]
        released = [item for item in batch if not isinstance(item, uuid.UUID)]
        if finished:
            try:
                rows = await self._db.run(workflows_sql.released_steps(finished))
            except psycopg.Error as exc:  # the sweep signals them again after a while
                logger.warning(
                    "Could not look up the steps %d finished step(s) released: %s",
                    len(finished),
                    exc,
                )
            else:
                released += [(row["queue_name"], str(row["id"])) for row in rows]
        if released:
            await asyncio.get_running_loop().run_in_executor(
                self._redis_calls, self._wakeups.push, released
            )
