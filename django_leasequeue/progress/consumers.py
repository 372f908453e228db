"""The websocket that pushes one job's progress to a browser (needs the ``channels`` extra).

Protocol, server to client only: first a ``snapshot`` (the job's state in the database, so a late
viewer sees where the job is), then the worker's live ``progress`` and ``status`` events, then a
``final`` state when the job ends, and the server closes. A job that ends without a live event
(a lost publish, the recover sweep failing it, a cancel from the admin) is noticed by a periodic
database check, so a viewer is never left waiting on a finished job.
"""

import asyncio
import contextlib
from itertools import chain, repeat
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from django_leasequeue.progress import events, viewers
from django_leasequeue.progress.access import can_view_job
from django_leasequeue.progress.state import JobState, load_job_state, missing_job_state
from django_leasequeue.status import JobStatus

# Close code sent before accepting, i.e. the handshake is refused (HTTP 403 on the wire).
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404

# Seconds after connecting of the first database checks, before the steady recheck interval.
_EARLY_RECHECKS = (0.5, 1.0, 1.5)

_FORWARDED_KEYS = {
    "progress": ("kind", "current", "total", "message"),
    "status": ("kind", "status"),
}


class JobProgressConsumer(AsyncJsonWebsocketConsumer):
    job_id: str
    group: str | None = None
    recheck: asyncio.Task | None = None
    finished: bool = False
    watching: bool = False

    def __init__(self, *args: Any, recheck_seconds: float = 5.0, **kwargs: Any) -> None:
        """``recheck_seconds``: how often the database is checked for a job that ended without
        a live event; set it with ``JobProgressConsumer.as_asgi(recheck_seconds=...)``."""
        super().__init__(*args, **kwargs)
        self.recheck_seconds = recheck_seconds

    async def connect(self) -> None:
        self.job_id = str(self.scope["url_route"]["kwargs"]["job_id"])
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        token = (query.get("token") or [None])[0]
        allowed = await database_sync_to_async(can_view_job)(
            self.scope.get("user"), self.job_id, token
        )
        if not allowed:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        # Join the group before reading the snapshot: an event published in between is queued
        # behind the snapshot rather than lost.
        await database_sync_to_async(viewers.watch)(self.job_id)
        self.watching = True
        self.group = events.group_name(self.job_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        state = await database_sync_to_async(load_job_state)(self.job_id)
        if state is None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            self.group = None
            await self.close(code=CLOSE_NOT_FOUND)
            return
        await self.accept()
        await self.send_json({"kind": "snapshot", **state})
        if state["final"]:
            await self.finish(state)
            return
        self.recheck = asyncio.create_task(self.recheck_until_final())

    async def leasequeue_event(self, message: dict[str, Any]) -> None:
        """A worker's event for this job, from the channel layer."""
        event = message["event"]
        keys = _FORWARDED_KEYS.get(event.get("kind"))
        if keys is None or self.finished:
            return
        await self.send_json({key: event.get(key) for key in keys})
        if event["kind"] == "status" and event.get("status") in JobStatus.terminal():
            state = await database_sync_to_async(load_job_state)(self.job_id) or {}
            # The event is authoritative for the status even if our read raced the commit.
            await self.finish({**state, "status": event["status"], "final": True})

    async def recheck_until_final(self) -> None:
        """Check soon after connecting, then every ``recheck_seconds``: a worker learns that a
        page follows its job within a second, so a short job may end before it publishes."""
        for delay in chain(_EARLY_RECHECKS, repeat(self.recheck_seconds)):
            await asyncio.sleep(min(delay, self.recheck_seconds))
            state = await database_sync_to_async(load_job_state)(self.job_id)
            if state is None or state["final"]:
                await self.finish(state or missing_job_state(self.job_id))
                return

    async def finish(self, state: JobState) -> None:
        """Send the final state and close, once (a live event and the recheck may both see it)."""
        if self.finished:
            return
        self.finished = True
        await self.send_json({**state, "kind": "final"})
        await self.close()

    async def disconnect(self, code: int) -> None:
        if self.recheck is not None:
            self.recheck.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.recheck
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
        if self.watching:
            await database_sync_to_async(viewers.watch)(self.job_id, -1)
