"""Group commit of successes: one fenced ``complete_many`` statement per batch."""

import asyncio
import logging

import psycopg

from django_leasequeue import protocol
from django_leasequeue.protocol import Lease
from django_leasequeue.runtime.batching import Batcher
from django_leasequeue.runtime.database import Database

logger = logging.getLogger(__name__)

_Completion = tuple[Lease, str, asyncio.Future[bool]]


class CompletionBatcher(Batcher[_Completion]):
    def __init__(self, db: Database) -> None:
        super().__init__()
        self._db = db

    async def complete(self, lease: Lease, result_json: str) -> bool:
        """Record success; True if applied, False if the lease was lost (nothing written)."""
        future = asyncio.get_running_loop().create_future()
        self.add((lease, result_json, future))
        return await future

    async def process(self, batch: list[_Completion]) -> None:
        try:
            applied = await self._db.run(
                protocol.complete_many([(lease, result) for lease, result, _ in batch])
            )
        except psycopg.Error as exc:
            if len(batch) == 1:
                self._fail(batch, exc)
                return
            # One row PostgreSQL refuses fails the whole statement: the others must not pay
            # for it, so each one goes again alone (the refused one gets the error).
            logger.warning(
                "Recording %d successes failed (%s: %s); recording each one alone.",
                len(batch),
                type(exc).__name__,
                str(exc).strip(),
            )
            for completion in batch:
                await self.process([completion])
            return
        except Exception as exc:
            self._fail(batch, exc)
            return
        for lease, _, future in batch:
            if not future.done():
                future.set_result(lease.job_id in applied)

    @staticmethod
    def _fail(batch: list[_Completion], exc: Exception) -> None:
        for _, _, future in batch:
            if not future.done():  # its job was cancelled meanwhile (a bounded stop)
                future.set_exception(exc)
