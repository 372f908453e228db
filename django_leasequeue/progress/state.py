"""What a browser is told about a job: status and progress, as one JSON-ready dict.

The same shape is the websocket snapshot, the websocket final event, the JSON status view and
the bar the template tag renders, so the JS client has a single way to read them.
"""

import json
import math
from typing import Any
from uuid import UUID

from django.utils.translation import gettext as _

from django_leasequeue.choices import JobStatus
from django_leasequeue.conf import job_database
from django_leasequeue.sql import reads as reads_sql
from django_leasequeue.sql.executor import execute

JobState = dict[str, Any]


def percent(current: float | None, total: float | None, status: str) -> int | None:
    """Whole percent done, floored so 100 means done; None when the total is unknown.

    Every view (the bar, the admin) shows this one number, so they never disagree.
    """
    if status == JobStatus.SUCCEEDED:
        return 100
    if current is None or not total or total <= 0:
        return None
    return max(0, min(100, math.floor(current / total * 100)))


def job_state(
    job_id: UUID | str, status: str, progress: dict[str, Any] | None, attempt: int
) -> JobState:
    progress = progress or {}
    current, total = progress.get("current"), progress.get("total")
    return {
        "job_id": str(job_id),
        "status": status,
        "current": current,
        "total": total,
        "message": progress.get("message", ""),
        "percent": percent(current, total, status),
        "attempt": attempt,
        "final": status in JobStatus.terminal(),
    }


def missing_job_state(job_id: UUID | str) -> JobState:
    """A job that does not exist (never did, or was deleted): drawn as ended, not watched."""
    return {
        "job_id": str(job_id),
        "status": "",
        "current": None,
        "total": None,
        "message": _("This job does not exist."),
        "percent": None,
        "attempt": 0,
        "final": True,
    }


def load_job_state(job_id: UUID | str) -> JobState | None:
    """The job's current state from the job database; None when there is no such job."""
    row = execute(reads_sql.job_progress(UUID(str(job_id))), job_database())
    if row is None:
        return None
    progress = json.loads(row["progress"]) if row["progress"] is not None else None
    return job_state(row["id"], row["status"], progress, row["attempt"])
