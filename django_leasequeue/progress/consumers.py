"""The websockets that push progress to a browser (needs the ``channels`` extra): one job's,
and one workflow's.

Protocol, server to client only: first a ``snapshot`` (the state in the database, so a late
viewer sees where things are), then live events, then a ``final`` state when the job or
workflow ends, and the server closes. An end without a live event (a lost publish, the recover
sweep failing a job, a cancel from the admin) is noticed by a periodic database check, so a
viewer is never left waiting on something finished.

A job's viewer gets the worker's ``progress`` and ``status`` events as they are. A workflow's
viewer gets ``state`` events: each event of one of its steps makes the consumer read the
workflow's state again (at most ``WORKFLOW_REFRESH_SECONDS`` apart, however many steps report).

A channel layer that cannot be reached (its Redis down) ends the connection cleanly: refused
before the handshake (the page sees the socket fail, and polls the JSON status view after a
few such attempts), or closed after it with ``CLOSE_UNAVAILABLE`` (the page polls at once).
The outage is logged once, not once per socket.

Each open websocket counts among its job's (or workflow's) viewers in Redis (``viewers.py``)
from after it joined the group until it ends, however it ends: a disconnect, the channel layer
failing, or its server cancelling it (Daphne does when a closed socket's consumer does not end
in time), which runs no ``disconnect``. A progress token opens at most
``viewers.MAX_SOCKETS_PER_TOKEN`` at once; past that a handshake is refused with
``CLOSE_TOO_MANY``.
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from itertools import chain, repeat
from typing import Any
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from redis.exceptions import RedisError

from django_leasequeue import progress_events as events
from django_leasequeue.choices import JobStatus
from django_leasequeue.outage_log import OutageLog
from django_leasequeue.progress import viewers
from django_leasequeue.progress.access import (
    Kind,
    can_view_job,
    can_view_workflow,
    token_expires_at,
)
from django_leasequeue.progress.state import load_job_state, missing_job_state
from django_leasequeue.progress.workflow_state import (
    load_workflow_state,
    missing_workflow_state,
)

# Close code sent before accepting, i.e. the handshake is refused (HTTP 403 on the wire).
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
# Sent when the token a connection was opened with expires.
CLOSE_TOKEN_EXPIRED = 4401
# A handshake refused because its token holds as many websockets open as it may (HTTP's 429).
CLOSE_TOO_MANY = 4429
# Sent when the channel layer cannot be reached (HTTP's 503, in the range RFC 6455 leaves to
# applications: Daphne refuses to send RFC 6455's own 1013, and the socket stayed open).
CLOSE_UNAVAILABLE = 4503
# What an unreachable channel layer raises: its Redis's errors (channels-redis), or a socket's.
_LAYER_DOWN = (RedisError, OSError)

logger = logging.getLogger(__name__)
_layer_outage = OutageLog(
    "The channel layer", logger, meanwhile="progress bars poll the JSON status view instead"
)

# Seconds after connecting of the first database checks, before the steady recheck interval.
_EARLY_RECHECKS = (0.5, 1.0, 1.5)
# Least time between two reads of a workflow's state, when its steps report many events.
WORKFLOW_REFRESH_SECONDS = 0.25

_FORWARDED_KEYS = {
    "progress": ("kind", "current", "total", "message"),
    "status": ("kind", "status"),
}

State = dict[str, Any]


class ProgressConsumer(AsyncJsonWebsocketConsumer):
    """What the job's and the workflow's websockets share: authorisation, the viewer count
    (and the token's cap), the snapshot, the periodic database check, the token's expiry and
    the final state."""

    kind: Kind
    url_kwarg: str
    # Set by each subclass: who may watch, the group, and the state in the database.
    can_view: Callable[[Any, str, str | None], bool]
    group_of: Callable[[str], str]
    load_state: Callable[[str], State | None]
    missing_state: Callable[[str], State]

    object_id: str
    group: str | None = None
    recheck: asyncio.Task | None = None
    expiry: asyncio.Task | None = None
    keep_counted: asyncio.Task | None = None
    finished: bool = False
    # This websocket's place among the viewers, from the handshake until it is counted out.
    viewer: viewers.Viewer | None = None
    # The last state sent from the database (the snapshot, then the workflow's reads).
    last_sent: State | None = None

    def __init__(self, *args: Any, recheck_seconds: float = 5.0, **kwargs: Any) -> None:
        """``recheck_seconds``: how often the database is checked for an end without a live
        event; set it with ``as_asgi(recheck_seconds=...)``."""
        super().__init__(*args, **kwargs)
        self.recheck_seconds = recheck_seconds

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Channels' consumer loop, which also waits on the channel layer: when the layer is
        unreachable, the connection ends cleanly instead of with an error and a traceback."""
        try:
            await super().__call__(scope, receive, send)
        except _LAYER_DOWN as exc:
            object_id = scope.get("url_route", {}).get("kwargs", {}).get(self.url_kwarg, "?")
            _layer_outage.failed(f"live progress of {object_id} unavailable ({exc})")
            self.group = None  # nothing to leave: the layer is down
            await self.disconnect(CLOSE_UNAVAILABLE)
            try:  # a server that cannot close would leave the page waiting on a silent socket
                await send({"type": "websocket.close", "code": CLOSE_UNAVAILABLE})
            except Exception:
                logger.exception("Could not close the websocket of %s.", object_id)
        finally:
            # Cancelled by its server, a consumer runs no disconnect: end here what it began.
            await self.stop_background_tasks()
            await self.stop_counting()

    async def connect(self) -> None:
        self.object_id = str(self.scope["url_route"]["kwargs"][self.url_kwarg])
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        token = (query.get("token") or [None])[0]
        user = self.scope.get("user")
        can_view = type(self).can_view
        if await database_sync_to_async(can_view)(user, self.object_id, None):
            token = None  # staff: no token to expire
        elif not await database_sync_to_async(can_view)(None, self.object_id, token):
            await self.close(code=CLOSE_FORBIDDEN)
            return
        # Set before the first Redis call: whatever happens from here, it is counted out.
        self.viewer = viewers.Viewer(self.object_id, self.channel_name, token)
        if not await _in_thread(self.viewer.admit):
            await self.close(code=CLOSE_TOO_MANY)
            return
        # Join the group before reading the snapshot: an event published in between is queued
        # behind the snapshot rather than lost. Counted as a viewer once in the group.
        self.group = type(self).group_of(self.object_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        _layer_outage.succeeded()
        await _in_thread(self.viewer.watch)
        self.keep_counted = asyncio.create_task(self.stay_counted())
        state = await self.read_state()
        if state is None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            self.group = None
            await self.close(code=CLOSE_NOT_FOUND)
            return
        await self.accept()
        if token is not None:
            self.expiry = asyncio.create_task(self.close_when_expired(token))
        self.last_sent = state
        await self.send_json({"kind": "snapshot", **state})
        if state["final"]:
            await self.finish(state)
            return
        self.recheck = asyncio.create_task(self.recheck_until_final())

    async def stay_counted(self) -> None:
        """Say every ``REFRESH_SECONDS`` that this websocket is still there: one whose server
        died stops counting ``VIEWER_TTL_SECONDS`` after it last did."""
        while self.viewer is not None:
            await asyncio.sleep(viewers.REFRESH_SECONDS)
            if self.viewer is not None:
                await _in_thread(self.viewer.watch)

    async def stop_counting(self) -> None:
        """Count this websocket out, once (a disconnect may run twice: after a channel-layer
        error, and again when the consumer ends)."""
        viewer, self.viewer = self.viewer, None
        if viewer is not None:
            await _in_thread(viewer.leave)

    async def read_state(self) -> State | None:
        return await database_sync_to_async(type(self).load_state)(self.object_id)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """The protocol is server to client only: whatever a client sends is ignored."""

    async def close_when_expired(self, token: str) -> None:
        """A token grants access until it expires, also on a connection opened before."""
        expires_at = token_expires_at(token, self.kind) or 0.0
        await asyncio.sleep(max(0.0, expires_at - time.time()))
        self.finished = True  # no more events
        await self.close(code=CLOSE_TOKEN_EXPIRED)

    async def recheck_until_final(self) -> None:
        """Check soon after connecting, then every ``recheck_seconds``: a worker learns that a
        page follows its job within a second, so a short job may end before it publishes."""
        for delay in chain(_EARLY_RECHECKS, repeat(self.recheck_seconds)):
            await asyncio.sleep(min(delay, self.recheck_seconds))
            state = await self.read_state()
            if state is None or state["final"]:
                await self.finish(state or type(self).missing_state(self.object_id))
                return
            await self.checked(state)

    async def checked(self, state: State) -> None:
        """What to do with an unfinished state the periodic check read (nothing, for a job:
        its worker sends every change)."""

    async def finish(self, state: State) -> None:
        """Send the final state and close, once (a live event and the recheck may both see it)."""
        if self.finished:
            return
        self.finished = True
        await self.send_json({**state, "kind": "final"})
        await self.close()
        await self.stop_background_tasks()

    async def stop_background_tasks(self) -> None:
        """Cancel the checks still running (but the one calling, when a check ended it)."""
        for task in self.background_tasks():
            if task is not None and task is not asyncio.current_task():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def disconnect(self, code: int) -> None:
        await self.stop_background_tasks()
        await self.stop_counting()  # before leaving the group, which fails with the layer
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    def background_tasks(self) -> list[asyncio.Task | None]:
        return [self.recheck, self.expiry, self.keep_counted]


async def _in_thread(call: Callable[[], object]) -> Any:
    """Run a sync Redis call of ``viewers`` off the loop. Thread-sensitive, like the database
    calls: one websocket's calls run in the order made, so a count-out queued behind a count-in
    a cancellation left running still runs after it."""
    return await sync_to_async(call, thread_sensitive=True)()


class JobProgressConsumer(ProgressConsumer):
    """``ws/leasequeue/jobs/<id>/``: one job's progress."""

    kind = "job"
    url_kwarg = "job_id"
    can_view = staticmethod(can_view_job)
    group_of = staticmethod(events.group_name)
    load_state = staticmethod(load_job_state)
    missing_state = staticmethod(missing_job_state)

    async def leasequeue_event(self, message: dict[str, Any]) -> None:
        """A worker's event for this job, from the channel layer."""
        event = message["event"]
        keys = _FORWARDED_KEYS.get(event.get("kind"))
        if keys is None or self.finished:
            return
        await self.send_json({key: event.get(key) for key in keys})
        if event["kind"] == "status" and event.get("status") in JobStatus.terminal():
            state = await self.read_state() or {}
            # The event is authoritative for the status even if our read raced the commit.
            await self.finish({**state, "status": event["status"], "final": True})


class WorkflowProgressConsumer(ProgressConsumer):
    """``ws/leasequeue/workflows/<id>/``: one bar for a whole workflow.

    Its steps' events only say that something changed: the state sent is read from the
    database, where the step trigger keeps the workflow's counters, so it is never ahead of
    what committed. The periodic check sends it too, which covers what no worker announces
    (steps released or cancelled by the trigger, a step that started before a worker saw the
    page)."""

    kind = "workflow"
    url_kwarg = "workflow_id"
    can_view = staticmethod(can_view_workflow)
    group_of = staticmethod(events.workflow_group_name)
    load_state = staticmethod(load_workflow_state)
    missing_state = staticmethod(missing_workflow_state)

    refresher: asyncio.Task | None = None
    stale: bool = False
    last_read: float = 0.0

    def __init__(self, *args: Any, recheck_seconds: float = 2.0, **kwargs: Any) -> None:
        super().__init__(*args, recheck_seconds=recheck_seconds, **kwargs)

    async def leasequeue_event(self, message: dict[str, Any]) -> None:
        """An event of one of the workflow's steps (or an operator's action on it)."""
        if self.finished:
            return
        self.stale = True
        if self.refresher is None or self.refresher.done():
            self.refresher = asyncio.create_task(self.refresh_while_stale())

    async def refresh_while_stale(self) -> None:
        """Read and send the state until no event came in meanwhile: an event arriving during
        a read marks it stale again, so the last change is always sent."""
        loop = asyncio.get_running_loop()
        while self.stale and not self.finished:
            await asyncio.sleep(max(0.0, self.last_read + WORKFLOW_REFRESH_SECONDS - loop.time()))
            self.stale = False
            self.last_read = loop.time()
            state = await self.read_state()
            if state is None or state["final"]:
                await self.finish(state or missing_workflow_state(self.object_id))
                return
            await self.checked(state)

    async def checked(self, state: State) -> None:
        """Send a state read from the database, unless the page has it already."""
        if not self.finished and state != self.last_sent:
            self.last_sent = state
            await self.send_json({**state, "kind": "state"})

    def background_tasks(self) -> list[asyncio.Task | None]:
        return [*super().background_tasks(), self.refresher]
