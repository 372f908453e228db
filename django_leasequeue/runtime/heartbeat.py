"""The heartbeat: renews every lease the worker process holds in one statement per tick, stops
the jobs whose lease was lost or whose cancel was requested, and fences itself when PostgreSQL
does not confirm a renewal in time (a job stops before its lease can end, so two executions of
one job never overlap, even across a silent network partition)."""

import asyncio
import logging
import time
import uuid
from collections.abc import Callable

import psycopg

from django_leasequeue.runtime import job_logging
from django_leasequeue.runtime.database import Database
from django_leasequeue.runtime.job_handle import JobHandle, StopReason
from django_leasequeue.sql import jobs as jobs_sql

logger = logging.getLogger(__name__)


def fence_margin(lease_seconds: float) -> float:
    """How long before the server's lease ends a worker stops a job whose renewal it could not
    confirm. Deadlines count from the moment a claim or renewal was *sent*, so the round trip
    is already inside them; the margin covers the two clocks running at slightly different
    rates (far below 1% between machines) and the time a job takes to stop once told: a tenth
    of the lease, at least 0.2 s."""
    return max(0.2, 0.1 * lease_seconds)


class Heartbeat:
    """Renews the leases of ``in_flight`` every ``heartbeat_seconds`` on its own connection
    (claims never delay it); ``on_tick`` runs first on every tick (the registry's beat)."""

    def __init__(
        self,
        db: Database,
        in_flight: dict[uuid.UUID, JobHandle],
        *,
        lease_seconds: float,
        heartbeat_seconds: float,
        on_tick: Callable[[int], None],
    ) -> None:
        self.db = db
        self.in_flight = in_flight
        self.lease_seconds = lease_seconds
        self.heartbeat_seconds = heartbeat_seconds
        self.on_tick = on_tick
        # A job's lease, as this worker knows it: the send time of the claim or of the last
        # confirmed renewal, plus the lease, less this margin (see ``fence_margin``).
        self.margin = fence_margin(lease_seconds)
        # Set while the worker could not confirm a renewal in time: it claims nothing.
        self.fenced = False

    def deadline(self, sent_at: float) -> float:
        """When a job claimed or renewed by a statement sent at ``sent_at`` must stop unless
        a later renewal is confirmed."""
        return sent_at + self.lease_seconds - self.margin

    async def run(self) -> None:
        """Renew every lease each ``heartbeat_seconds``; stop the jobs whose renewal cannot be
        confirmed before their deadline (self-fencing: their lease may be someone else's)."""
        while True:
            deadlines = [h.fence_deadline for h in self.in_flight.values()]
            until_deadline = min(deadlines, default=float("inf")) - time.monotonic()
            await asyncio.sleep(max(0.0, min(self.heartbeat_seconds, until_deadline)))
            self.stop_expired(time.monotonic())
            self.on_tick(len(self.in_flight))
            handles = [h for h in self.in_flight.values() if h.stop_reason is None]
            if handles or self.fenced:
                await self._renew(handles)
                self.stop_expired(time.monotonic())

    async def _renew(self, handles: list[JobHandle]) -> None:
        sent_at = time.monotonic()
        deadline = min([h.fence_deadline for h in handles] or [sent_at + self.margin * 5])
        statement = asyncio.create_task(
            self.db.run(
                jobs_sql.heartbeat(
                    [handle.lease for handle in handles], lease_seconds=self.lease_seconds
                )
            )
        )
        done, _ = await asyncio.wait([statement], timeout=max(0.0, deadline - sent_at))
        if not done:
            self._self_fence(handles)
            self.db.abandon(statement)
            return
        try:
            reply = statement.result()
        except psycopg.Error as exc:
            # Refused, not unanswered: nothing was renewed. Jobs keep their deadlines and stop
            # at them unless a later renewal goes through first.
            logger.error(
                "Lease renewal failed (%s: %s); renewing again in %.1fs.",
                type(exc).__name__,
                str(exc).strip(),
                self.heartbeat_seconds,
            )
            return
        if self.fenced:
            logger.warning("PostgreSQL answers again: claiming again.")
            self.fenced = False
        renewed_until = self.deadline(sent_at)
        for handle in handles:
            if handle.job.id not in reply.held:
                handle.stop(StopReason.LEASE_LOST)
            elif handle.job.id in reply.cancel_requested:
                handle.stop(StopReason.CANCEL_REQUESTED)
            if handle.job.id in reply.renewed:
                handle.fence_deadline = renewed_until

    def _self_fence(self, handles: list[JobHandle]) -> None:
        """No confirmed renewal before the deadline: stop those jobs, claim nothing more."""
        if not self.fenced:
            logger.error(
                "PostgreSQL did not confirm lease renewals in time: stopping %d job(s) before "
                "their leases can expire, and claiming nothing until it answers again.",
                len(handles),
            )
        self.fenced = True
        for handle in handles:
            handle.stop(StopReason.LEASE_LOST)

    def stop_expired(self, now: float) -> None:
        """Jobs held but not renewed (an operator holds their row, or renewals were refused)
        stop at their own deadline."""
        for handle in list(self.in_flight.values()):
            if handle.stop_reason is None and handle.fence_deadline <= now:
                with job_logging.about(job_logging.fields_of(handle.job)):
                    logger.warning("Job %s: lease not renewed in time; stopping it.", handle.job.id)
                handle.stop(StopReason.LEASE_LOST)
