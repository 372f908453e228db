"""The live progress bar's template context: ``{% leasequeue_progress job %}`` renders it.

``job`` may be a ``Job``, a Django ``TaskResult`` or a job id. The bar is rendered with the state
in the database (it reads right without JavaScript), then ``leasequeue/progress.js`` keeps it live.
"""

import json
import uuid
from typing import Any

from django.conf import settings
from django.urls import reverse
from django.utils.translation import gettext as _

from django_leasequeue.models import Job
from django_leasequeue.progress.access import job_token
from django_leasequeue.progress.events import WEBSOCKET_PATH, websockets_enabled
from django_leasequeue.progress.state import job_state, load_job_state, missing_job_state
from django_leasequeue.status import JobStatus
from django_leasequeue.tasks_framework import TaskResult

TEMPLATE = "leasequeue/progress.html"


def _job_id(job: Job | TaskResult | uuid.UUID | str) -> uuid.UUID | None:
    """The job's id, or None when what the template passed cannot be one."""
    if isinstance(job, Job):
        return job.pk
    try:
        return uuid.UUID(str(job.id if isinstance(job, TaskResult) else job))
    except ValueError:
        return None


def progress_bar_context(
    job: Job | TaskResult | uuid.UUID | str, label: str = ""
) -> dict[str, Any]:
    """What ``leasequeue/progress.html`` needs to draw one job's bar and keep it live.

    Something that cannot be a job id draws the bar of a job that does not exist.
    """
    job_id = _job_id(job)
    if job_id is None:
        return {
            "debug": settings.DEBUG,
            "state": missing_job_state(""),
            "label": label or _("Job progress"),
            "status_label": "",
            "status_labels": "{}",
            "token": "",
            "status_url": "",
            "websocket_path": "",
            "dom_id": f"leasequeue-missing-{uuid.uuid4().hex[:8]}",
        }
    if isinstance(job, Job):
        state = job_state(job.pk, job.status, job.progress, job.attempt)
    else:
        state = load_job_state(job_id) or missing_job_state(job_id)
    return {
        # With DEBUG on, a bar whose script cannot load says so on the page.
        "debug": settings.DEBUG,
        "state": state,
        "label": label or _("Job progress"),
        "status_label": JobStatus(state["status"]).label if state["status"] else "",
        "status_labels": json.dumps({status.value: str(status.label) for status in JobStatus}),
        "token": job_token(job_id),
        "status_url": reverse("leasequeue:job-status", args=[job_id]),
        "websocket_path": f"{WEBSOCKET_PATH}{job_id}/" if websockets_enabled() else "",
        "dom_id": f"leasequeue-{job_id}-{uuid.uuid4().hex[:8]}",
    }
