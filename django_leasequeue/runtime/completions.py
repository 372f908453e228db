"""Group commit of successes: one fenced ``complete_many`` statement per batch, and one
``complete_steps`` for the workflow steps among them, after it (their books kept once per
batch; the steps they release are handed to the ``ReleasedStepsWaker``, no lookup needed)."""

import asyncio
import logging
from typing import NamedTuple

import psycopg

from django_leasequeue.runtime.batching import Batcher
from django_leasequeue.runtime.database import Database
from django_leasequeue.runtime.workflow_steps import ReleasedStepsWaker
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.records import Lease

logger = logging.getLogger(__name__)


class _Completion(NamedTuple):
    lease: Lease
    result_json: str
    workflow_step: bool
    future: asyncio.Future[bool]


class CompletionBatcher(Batcher[_Completion]):
    def __init__(self, db: Database, released_steps: ReleasedStepsWaker) -> None:
        super().__init__()
        self._db = db
        self._released_steps = released_steps

    async def complete(self, lease: Lease, result_json: str, *, workflow_step: bool) -> bool:
        """Record success; True if applied, False if the lease was lost (nothing written)."""
        future = asyncio.get_running_loop().create_future()
        self.add(_Completion(lease, result_json, workflow_step, future))
        return await future

    async def process(self, batch: list[_Completion]) -> None:
        plain_jobs = [completion for completion in batch if not completion.workflow_step]
        steps = [completion for completion in batch if completion.workflow_step]
        for completions in (plain_jobs, steps):
            if completions:
                await self._record(completions)

    async def _record(self, batch: list[_Completion], *, again: bool = False) -> None:
        """One statement for the batch, all plain jobs or all workflow steps; ``again``: a
        success going again alone after its batch was refused."""
        outcomes = [(completion.lease, completion.result_json) for completion in batch]
        released: list[tuple[str, str]] = []
        try:
            if batch[0].workflow_step:
                applied, released = await self._db.run(jobs_sql.complete_steps(outcomes))
            else:
                applied = await self._db.run(jobs_sql.complete_many(outcomes))
        except psycopg.Error as exc:
            if again:
                self._fail(batch, exc)
                return
            # One row PostgreSQL refuses fails the whole statement: the others must not pay
            # for it, and a refusal that passes (a fault, a timeout) must not fail a good
            # value, a batch of one included. So each goes again alone, and only a success
            # refused again gets the error.
            logger.warning(
                "Recording %d success(es) failed (%s: %s); recording each one again, alone.",
                len(batch),
                type(exc).__name__,
                str(exc).strip(),
            )
            for completion in batch:
                await self._record([completion], again=True)
            return
        except Exception as exc:
            self._fail(batch, exc)
            return
        for completion in batch:
            if not completion.future.done():
                completion.future.set_result(completion.lease.job_id in applied)
        self._released_steps.add_released(released)  # pushed by its own task: no wait here

    @staticmethod
    def _fail(batch: list[_Completion], exc: Exception) -> None:
        for completion in batch:
            if not completion.future.done():  # its job was cancelled meanwhile (a bounded stop)
                completion.future.set_exception(exc)
