"""The websocket that pushes one job's progress to a browser (needs the ``channels`` extra).

Protocol, server to client only: first a ``snapshot`` (the job's state in the database, so a late
viewer sees where the job is), then the worker's live ``progress`` and ``status`` events, then a
``final`` state when the job ends, and the server closes. A job that ends without a live event
(a lost publish, the recover sweep failing it, a cancel from the admin) is noticed by a periodic
database check, so a viewer is never left waiting on a finished job.

A channel layer that cannot be reached (its Redis down) ends the connection cleanly, refused
before the handshake or closed after it, with ``CLOSE_UNAVAILABLE``; the page's bar then falls
back to polling the JSON status view. The outage is logged once, not once per socket.
"""

import asyncio
import contextlib
import logging
import time
from itertools import chain, repeat
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from redis.exceptions import RedisError

from django_leasequeue.outage_log import OutageLog
from django_leasequeue.progress import events, viewers
from django_leasequeue.progress.access import can_view_job, token_expires_at
from django_leasequeue.progress.state import JobState, load_job_state, missing_job_state
from django_leasequeue.status import JobStatus

# Close code sent before accepting, i.e. the handshake is refused (HTTP 403 on the wire).
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
# Sent when the token a connection was opened with expires.
CLOSE_TOKEN_EXPIRED = 4401
# Sent when the channel layer cannot be reached (RFC 6455's "try again later").
CLOSE_UNAVAILABLE = 1013
# What an unreachable channel layer raises: its Redis's errors (channels-redis), or a socket's.
_LAYER_DOWN = (RedisError, OSError)

logger = logging.getLogger(__name__)
_layer_outage = OutageLog(
    "The channel layer", logger, meanwhile="progress bars poll the JSON status view instead"
)

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
    expiry: asyncio.Task | None = None
    finished: bool = False
    watching: bool = False

    def __init__(self, *args: Any, recheck_seconds: float = 5.0, **kwargs: Any) -> None:
        """``recheck_seconds``: how often the database is checked for a job that ended without
        a live event; set it with ``JobProgressConsumer.as_asgi(recheck_seconds=...)``."""
        super().__init__(*args, **kwargs)
        self.recheck_seconds = recheck_seconds

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Channels' consumer loop, which also waits on the channel layer: when the layer is
        unreachable, the connection ends cleanly instead of with an error and a traceback."""
        try:
            await super().__call__(scope, receive, send)
        except _LAYER_DOWN as exc:
            job_id = scope.get("url_route", {}).get("kwargs", {}).get("job_id", "?")
            _layer_outage.failed(f"live progress of job {job_id} unavailable ({exc})")
            self.group = None  # nothing to leave: the layer is down
            await self.disconnect(CLOSE_UNAVAILABLE)
            with contextlib.suppress(Exception):  # the client may be gone already
                await send({"type": "websocket.close", "code": CLOSE_UNAVAILABLE})

    async def connect(self) -> None:
        self.job_id = str(self.scope["url_route"]["kwargs"]["job_id"])
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        token = (query.get("token") or [None])[0]
        user = self.scope.get("user")
        if await database_sync_to_async(can_view_job)(user, self.job_id, None):
            token = None  # staff: no token to expire
        elif not await database_sync_to_async(can_view_job)(None, self.job_id, token):
            await self.close(code=CLOSE_FORBIDDEN)
            return
        # Join the group before reading the snapshot: an event published in between is queued
        # behind the snapshot rather than lost.
        await database_sync_to_async(viewers.watch)(self.job_id)
        self.watching = True
        self.group = events.group_name(self.job_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        _layer_outage.succeeded()
        state = await database_sync_to_async(load_job_state)(self.job_id)
        if state is None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            self.group = None
            await self.close(code=CLOSE_NOT_FOUND)
            return
        await self.accept()
        if token is not None:
            self.expiry = asyncio.create_task(self.close_when_expired(token))
        await self.send_json({"kind": "snapshot", **state})
        if state["final"]:
            await self.finish(state)
            return
        self.recheck = asyncio.create_task(self.recheck_until_final())

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """The protocol is server to client only: whatever a client sends is ignored."""

    async def close_when_expired(self, token: str) -> None:
        """A token grants access until it expires, also on a connection opened before."""
        expires_at = token_expires_at(token) or 0.0
        await asyncio.sleep(max(0.0, expires_at - time.time()))
        self.finished = True  # no more events
        await self.close(code=CLOSE_TOKEN_EXPIRED)

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
        for task in (self.recheck, self.expiry):
            if task is not None and task is not asyncio.current_task():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
        if self.watching:
            await database_sync_to_async(viewers.watch)(self.job_id, -1)
