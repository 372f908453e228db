"""``{% leasequeue_progress job %}``: a live, accessible progress bar for one job.

``job`` may be a ``Job``, a Django ``TaskResult`` or a job id. The bar is rendered with the state
in the database (it reads right without JavaScript), then ``leasequeue/progress.js`` keeps it live.
"""

import json
import uuid
from typing import Any

from django import template
from django.tasks import TaskResult
from django.urls import reverse
from django.utils.translation import gettext as _

from django_leasequeue import live
from django_leasequeue.jobstate import JobState, job_state, load_job_state
from django_leasequeue.models import Job, JobStatus
from django_leasequeue.tokens import job_token

register = template.Library()


def _state_of(job: Job | TaskResult | uuid.UUID | str) -> JobState:
    if isinstance(job, Job):
        return job_state(job)
    job_id = uuid.UUID(str(job.id if isinstance(job, TaskResult) else job))
    # A missing job is drawn as ended, so the client does not watch it.
    return load_job_state(job_id) or {
        "job_id": str(job_id),
        "status": "",
        "current": None,
        "total": None,
        "message": _("This job does not exist."),
        "percent": None,
        "attempt": 0,
        "final": True,
    }


@register.inclusion_tag("leasequeue/progress.html")
def leasequeue_progress(job: Job | TaskResult | uuid.UUID | str, label: str = "") -> dict[str, Any]:
    state = _state_of(job)
    job_id = state["job_id"]
    return {
        "state": state,
        "label": label or _("Job progress"),
        "status_label": JobStatus(state["status"]).label if state["status"] else "",
        "status_labels": json.dumps({status.value: str(status.label) for status in JobStatus}),
        "token": job_token(job_id),
        "status_url": reverse("leasequeue:job-status", args=[job_id]),
        "websocket_path": f"{live.WEBSOCKET_PATH}{job_id}/" if live.websockets_enabled() else "",
        "dom_id": f"leasequeue-{job_id}-{uuid.uuid4().hex[:8]}",
    }
