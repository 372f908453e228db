"""Group commit of successes: one fenced ``complete_many`` statement per batch."""

import asyncio

from django_leasequeue import protocol
from django_leasequeue.protocol import Lease
from django_leasequeue.runtime.batching import Batcher
from django_leasequeue.runtime.database import Database

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
        except Exception as exc:
            for _, _, future in batch:
                if not future.done():  # its job was cancelled meanwhile (a bounded stop)
                    future.set_exception(exc)
            return
        for lease, _, future in batch:
            if not future.done():
                future.set_result(lease.job_id in applied)
