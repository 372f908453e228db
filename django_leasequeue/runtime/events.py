"""Live job events (progress, status) for browser pages; never allowed to fail a job."""

from typing import Any


async def publish(job_id: Any, event: dict[str, Any]) -> None:
    """Forward to the Channels publisher when the app's live module is available."""
    try:
        from django_leasequeue.live import apublish
    except ImportError:
        return
    await apublish(job_id, event)
