"""What a browser is told about a job: status and progress, as one JSON-ready dict.

The same shape is the websocket snapshot, the websocket final event and the JSON status view, so
the JS client has a single way to read them.
"""

import math
from typing import Any
from uuid import UUID

from django_leasequeue.models import Job, JobStatus

JobState = dict[str, Any]


def percent(current: float | None, total: float | None, status: str) -> int | None:
    """Whole percent done, floored so 100 means done; None when the total is unknown."""
    if status == JobStatus.SUCCEEDED:
        return 100
    if current is None or not total or total <= 0:
        return None
    return max(0, min(100, math.floor(current / total * 100)))


def job_state(job: Job) -> JobState:
    progress = job.progress or {}
    current, total = progress.get("current"), progress.get("total")
    return {
        "job_id": str(job.id),
        "status": job.status,
        "current": current,
        "total": total,
        "message": progress.get("message", ""),
        "percent": percent(current, total, job.status),
        "attempt": job.attempt,
        "final": job.status in JobStatus.terminal(),
    }


def load_job_state(job_id: UUID | str) -> JobState | None:
    """The job's current state from the database; None when there is no such job."""
    job = Job.objects.filter(pk=job_id).only("id", "status", "progress", "attempt").first()
    return None if job is None else job_state(job)
