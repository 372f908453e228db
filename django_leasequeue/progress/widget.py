"""The live progress bar's template context: ``{% leasequeue_progress job %}`` renders it.

``job`` may be a ``Job``, a Django ``TaskResult`` or a job id; or a workflow: a
``WorkflowHandle``, a ``WorkflowRun`` or a workflow id (an id that is no job's is looked up as a
workflow's). The bar is rendered with the state in the database (it reads right without
JavaScript), then ``leasequeue/progress.js`` keeps it live: a workflow's bar through its own
websocket and JSON view, with the same script.
"""

import json
import uuid
from typing import Any

from django.conf import settings
from django.db.models import TextChoices
from django.urls import reverse
from django.utils.translation import gettext as _

from django_leasequeue.choices import JobStatus, WorkflowStatus
from django_leasequeue.models import Job, WorkflowRun
from django_leasequeue.progress.access import job_token, workflow_token
from django_leasequeue.progress.state import job_state, load_job_state, missing_job_state
from django_leasequeue.progress.workflow_state import load_workflow_state, missing_workflow_state
from django_leasequeue.progress_events import (
    WEBSOCKET_PATH,
    WORKFLOW_WEBSOCKET_PATH,
    websockets_enabled,
)
from django_leasequeue.tasks_framework import TaskResult
from django_leasequeue.workflows.handle import WorkflowHandle

TEMPLATE = "leasequeue/progress.html"

Watched = Job | TaskResult | WorkflowHandle | WorkflowRun | uuid.UUID | str


def _object_id(watched: Watched) -> uuid.UUID | None:
    """The job's or workflow's id, or None when what the template passed cannot be one."""
    if isinstance(watched, Job | WorkflowRun):
        return watched.pk
    if isinstance(watched, TaskResult | WorkflowHandle):
        watched = watched.id
    try:
        return uuid.UUID(str(watched))
    except ValueError:
        return None


def _labels(choices: type[TextChoices]) -> str:
    return json.dumps({status.value: str(status.label) for status in choices})


def progress_bar_context(watched: Watched, label: str = "") -> dict[str, Any]:
    """What ``leasequeue/progress.html`` needs to draw one job's (or workflow's) bar and keep
    it live. Something that cannot be an id draws the bar of a job that does not exist."""
    object_id = _object_id(watched)
    if object_id is None:
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
    if isinstance(watched, WorkflowHandle | WorkflowRun):
        return workflow_bar_context(object_id, label)
    if isinstance(watched, Job):
        state = job_state(watched.pk, watched.status, watched.progress, watched.attempt)
    elif (loaded := load_job_state(object_id)) is not None:
        state = loaded
    elif (
        not isinstance(watched, TaskResult)
        and (workflow := load_workflow_state(object_id)) is not None
    ):
        return workflow_bar_context(object_id, label, workflow)
    else:
        state = missing_job_state(object_id)
    return {
        # With DEBUG on, a bar whose script cannot load says so on the page.
        "debug": settings.DEBUG,
        "state": state,
        "label": label or _("Job progress"),
        "status_label": JobStatus(state["status"]).label if state["status"] else "",
        "status_labels": _labels(JobStatus),
        "token": job_token(object_id),
        "status_url": reverse("leasequeue:job-status", args=[object_id]),
        "websocket_path": f"{WEBSOCKET_PATH}{object_id}/" if websockets_enabled() else "",
        "dom_id": f"leasequeue-{object_id}-{uuid.uuid4().hex[:8]}",
    }


def workflow_bar_context(
    workflow_id: uuid.UUID, label: str = "", state: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The bar of a whole workflow: steps finished out of all, running ones in part."""
    state = state or load_workflow_state(workflow_id) or missing_workflow_state(workflow_id)
    return {
        "debug": settings.DEBUG,
        "state": state,
        "label": label or _("Workflow progress"),
        "status_label": WorkflowStatus(state["status"]).label if state["status"] else "",
        "status_labels": _labels(WorkflowStatus),
        "token": workflow_token(workflow_id),
        "status_url": reverse("leasequeue:workflow-status", args=[workflow_id]),
        "websocket_path": (
            f"{WORKFLOW_WEBSOCKET_PATH}{workflow_id}/" if websockets_enabled() else ""
        ),
        "dom_id": f"leasequeue-{workflow_id}-{uuid.uuid4().hex[:8]}",
    }
