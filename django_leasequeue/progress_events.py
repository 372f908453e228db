"""Live job events over the Channels layer: what the worker publishes, the websocket pushes.

A workflow step's events also go to its workflow's group while a page follows the workflow;
its websocket reads the workflow's state again on each of them.

Channels is an optional extra. Without it, or without ``CHANNEL_LAYERS``, publishing is a no-op:
browsers still see progress by polling the database. A publishing failure is logged and
swallowed, because progress must never fail a job.
"""

import asyncio
import logging
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any
from uuid import UUID

from asgiref.sync import async_to_sync
from django.db import transaction
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

# Where ``routing.websocket_urlpatterns`` serves a job's websocket: WEBSOCKET_PATH + "<id>/".
WEBSOCKET_PATH = "/ws/leasequeue/jobs/"
# ... and a workflow's: WORKFLOW_WEBSOCKET_PATH + "<id>/".
WORKFLOW_WEBSOCKET_PATH = "/ws/leasequeue/workflows/"
# The channel-layer message type; consumers handle it in ``leasequeue_event``.
EVENT_TYPE = "leasequeue.event"
# A publish waits at most this long: an unreachable Redis must not stall the task reporting.
_PUBLISH_TIMEOUT_SECONDS = 2.0
# After the layer itself failed (unreachable, too slow), skip it this long instead of paying a
# timeout per event. Other failures concern one event only and pause nothing.
_PAUSE_AFTER_FAILURE_SECONDS = 5.0
_LAYER_FAILURES = (TimeoutError, OSError, RedisConnectionError, RedisTimeoutError)
_paused_until: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()


def group_name(job_id: UUID | str) -> str:
    """The channel-layer group of one job; raises ValueError for anything but a UUID."""
    return f"leasequeue.job.{UUID(str(job_id))}"


def workflow_group_name(workflow_id: UUID | str) -> str:
    """The channel-layer group of one workflow; raises ValueError for anything but a UUID."""
    return f"leasequeue.workflow.{UUID(str(workflow_id))}"


def _channel_layer() -> Any:
    try:
        from channels.layers import get_channel_layer
    except ImportError:
        return None
    return get_channel_layer()


def websockets_enabled() -> bool:
    """Whether this process can serve live events (else browsers only poll the JSON view)."""
    return _channel_layer() is not None


async def apublish(job_id: UUID | str, event: dict[str, Any]) -> None:
    """Send ``event`` to every websocket watching the job; never raises."""
    await _send(group_name, job_id, event, "job")


async def apublish_workflow(workflow_id: UUID | str, event: dict[str, Any]) -> None:
    """Send one of its steps' ``event`` to every websocket watching the workflow; never
    raises."""
    await _send(workflow_group_name, workflow_id, event, "workflow")


async def _send(
    group: Callable[[UUID | str], str], object_id: UUID | str, event: dict[str, Any], kind: str
) -> None:
    layer = None
    try:
        layer = _channel_layer()
        if layer is None or time.monotonic() < _paused_until.get(layer, 0.0):
            return
        message = {"type": EVENT_TYPE, "event": event}
        await asyncio.wait_for(
            layer.group_send(group(object_id), message), _PUBLISH_TIMEOUT_SECONDS
        )
    except Exception as exc:
        if layer is not None and isinstance(exc, _LAYER_FAILURES):
            _paused_until[layer] = time.monotonic() + _PAUSE_AFTER_FAILURE_SECONDS
        logger.warning(
            "Could not publish %s event of %s %s to the channel layer (%r); live viewers "
            "will catch up from the database.",
            event.get("kind"),
            kind,
            object_id,
            exc,
        )


def publish(job_id: UUID | str, event: dict[str, Any]) -> None:
    """Sync twin of ``apublish``, for code outside an event loop."""
    async_to_sync(apublish)(job_id, event)


def publish_statuses_on_commit(statuses: Mapping[Any, str], database: str) -> None:
    """After the transaction commits, tell open pages the new status of these jobs.

    For changes made outside a worker (cancel, admin actions); a rollback publishes nothing.
    """
    if statuses and _channel_layer() is not None:
        events = [
            (job_id, {"kind": "status", "status": str(status)})
            for job_id, status in statuses.items()
        ]

        def publish_all() -> None:
            for job_id, event in events:
                publish(job_id, event)

        transaction.on_commit(publish_all, using=database)


def publish_workflow_on_commit(workflow_id: UUID | str, database: str) -> None:
    """After the transaction commits, tell the pages following the workflow that it changed
    (an operator's cancel or retry); a rollback publishes nothing."""
    if _channel_layer() is not None:
        event = {"kind": "status"}
        transaction.on_commit(
            lambda: async_to_sync(apublish_workflow)(workflow_id, event), using=database
        )
