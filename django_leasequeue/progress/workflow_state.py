"""What a browser is told about a workflow: one bar for all its steps, as one JSON-ready dict.

The bar counts steps: those that finished (whatever their outcome) count whole, each running
step counts for the share of its own progress it reported (``current / total``). The dict has
the keys of a job's state that the bar reads (``status``, ``current``, ``total``, ``message``,
``percent``, ``final``), so the same template and script draw both.

Reading it costs two index probes however big the workflow: its row (whose counters the step
trigger keeps) and its running steps.
"""

import json
from collections.abc import Iterable
from typing import Any
from uuid import UUID

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from django_leasequeue.choices import WorkflowStatus
from django_leasequeue.conf import job_database
from django_leasequeue.progress.state import percent
from django_leasequeue.sql import workflows as workflows_sql
from django_leasequeue.sql.executor import execute

WorkflowState = dict[str, Any]


def step_share(progress: dict[str, Any] | None) -> float:
    """How much of a running step is done, 0 to 1, from the progress it reported."""
    if not isinstance(progress, dict):
        return 0.0
    current, total = progress.get("current"), progress.get("total")
    if not isinstance(current, int | float) or not isinstance(total, int | float) or total <= 0:
        return 0.0
    return max(0.0, min(1.0, current / total))


def workflow_state(
    workflow_id: UUID | str,
    status: str,
    steps_total: int,
    steps_unfinished: int,
    steps_failed: int,
    running_progress: Iterable[dict[str, Any] | None],
) -> WorkflowState:
    running = list(running_progress)
    finished = steps_total - steps_unfinished
    current = finished + sum(step_share(progress) for progress in running)
    message = ngettext(
        "%(finished)d of %(total)d step finished",
        "%(finished)d of %(total)d steps finished",
        steps_total,
    ) % {"finished": finished, "total": steps_total}
    if running:
        message += _(", %(count)d running") % {"count": len(running)}
    if steps_failed:
        message += _(", %(count)d failed or cancelled") % {"count": steps_failed}
    return {
        "workflow_id": str(workflow_id),
        "status": status,
        "current": current,
        "total": steps_total,
        "message": message,
        "percent": percent(current, steps_total, status),
        "steps_finished": finished,
        "steps_running": len(running),
        "steps_failed": steps_failed,
        "final": status != WorkflowStatus.RUNNING,
    }


def missing_workflow_state(workflow_id: UUID | str) -> WorkflowState:
    """A workflow that does not exist (never did, or was deleted): drawn as ended."""
    return {
        "workflow_id": str(workflow_id),
        "status": "",
        "current": None,
        "total": None,
        "message": _("This workflow does not exist."),
        "percent": None,
        "steps_finished": 0,
        "steps_running": 0,
        "steps_failed": 0,
        "final": True,
    }


def load_workflow_state(workflow_id: UUID | str) -> WorkflowState | None:
    """The workflow's current state from the job database; None when there is no such
    workflow."""
    row = execute(workflows_sql.workflow_state(UUID(str(workflow_id))), job_database())
    if row is None:
        return None
    running: list[Any] = json.loads(row["running"])
    return workflow_state(
        row["id"],
        row["status"],
        row["steps_total"],
        row["steps_unfinished"],
        row["steps_failed"],
        running,
    )
