"""Group commit of successes: completions that arrive while a write is in flight share the next."""

import asyncio
import logging

from django_leasequeue import protocol
from django_leasequeue.protocol import Lease
from django_leasequeue.runtime.database import Database

logger = logging.getLogger(__name__)


class CompletionBatcher:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._pending: list[tuple[Lease, str, asyncio.Future[bool]]] = []
        self._wake = asyncio.Event()

    async def complete(self, lease: Lease, result_json: str) -> bool:
        """Record success; True if applied, False if the lease was lost (nothing written)."""
        future = asyncio.get_running_loop().create_future()
        self._pending.append((lease, result_json, future))
        self._wake.set()
        return await future

    async def run(self) -> None:
        """Write pending completions, one statement per batch, until cancelled."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            await self.flush()

    async def flush(self) -> None:
        batch, self._pending = self._pending, []
        if not batch:
            return
        try:
            applied = await self._db.run(
                protocol.complete_many([(lease, result) for lease, result, _ in batch])
            )
        except Exception as exc:
            for _, _, future in batch:
                future.set_exception(exc)
            return
        for lease, _, future in batch:
            future.set_result(lease.job_id in applied)
