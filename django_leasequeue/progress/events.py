"""Live job events over the Channels layer: what the worker publishes, the websocket pushes.

Channels is an optional extra. Without it, or without ``CHANNEL_LAYERS``, publishing is a no-op:
browsers still see progress by polling the database. A publishing failure is logged and
swallowed, because progress must never fail a job.
"""

import asyncio
import logging
import time
import weakref
from collections.abc import Mapping
from typing import Any
from uuid import UUID

from asgiref.sync import async_to_sync
from django.db import transaction
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

# Where ``routing.websocket_urlpatterns`` serves a job's websocket: WEBSOCKET_PATH + "<id>/".
WEBSOCKET_PATH = "/ws/leasequeue/jobs/"
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
    layer = None
    try:
        layer = _channel_layer()
        if layer is None or time.monotonic() < _paused_until.get(layer, 0.0):
            return
        message = {"type": EVENT_TYPE, "event": event}
        await asyncio.wait_for(
            layer.group_send(group_name(job_id), message), _PUBLISH_TIMEOUT_SECONDS
        )
    except Exception as exc:
        if layer is not None and isinstance(exc, _LAYER_FAILURES):
            _paused_until[layer] = time.monotonic() + _PAUSE_AFTER_FAILURE_SECONDS
        logger.warning(
            "Could not publish %s event of job %s to the channel layer (%r); live viewers "
            "will catch up from the database.",
            event.get("kind"),
            job_id,
            exc,
        )


def publish(job_id: UUID | str, event: dict[str, Any]) -> None:
    """Sync twin of ``apublish``, for code outside an event loop."""
    async_to_sync(apublish)(job_id, event)


def publish_statuses_on_commit(statuses: Mapping[Any, str], using: str) -> None:
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

        transaction.on_commit(publish_all, using=using)
