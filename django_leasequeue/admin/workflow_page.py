"""What a workflow's admin page shows below its fields: the graph and the step table, or, for
a workflow of more than ``GRAPH_STEP_LIMIT`` steps, its steps counted by status (each count a
link to those steps in the job list), since thousands of boxes would help nobody and cost the
page a read of every step."""

from typing import Any

from django.db.models import Count
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from django_leasequeue.admin import display as show
from django_leasequeue.admin.workflow_graph import graph_svg
from django_leasequeue.admin.workflow_layout import Dependency, GraphStep, layout, natural_key
from django_leasequeue.choices import JobStatus, RunIf
from django_leasequeue.models import Job, StepDependency, WorkflowRun

# Above this many steps a workflow's page counts its steps instead of drawing them.
GRAPH_STEP_LIMIT = 300
_CALLBACKS = {RunIf.ON_SUCCESS, RunIf.ON_FAILURE, RunIf.ON_COMPLETE}
_TABLE_FIELDS = (
    "id",
    "step_name",
    "status",
    "task_path",
    "run_if",
    "attempt",
    "max_attempts",
    "cancel_requested",
    "started_at",
    "finished_at",
)


def page_context(workflow: WorkflowRun, admin_site: str, database: str) -> dict[str, Any]:
    steps_url = f"{reverse(f'{admin_site}:leasequeue_job_changelist')}?workflow={workflow.pk}"
    if workflow.steps_total > GRAPH_STEP_LIMIT:
        return {
            "graph_limit": GRAPH_STEP_LIMIT,
            "step_counts": _counts(workflow, steps_url, database),
            "all_steps_url": steps_url,
        }
    jobs = {
        job.pk: job
        for job in Job.objects.using(database).filter(workflow_id=workflow.pk).only(*_TABLE_FIELDS)
    }
    graph = layout(
        [
            GraphStep(job.pk, job.step_name or "", job.status, job.run_if in _CALLBACKS)
            for job in sorted(jobs.values(), key=lambda job: natural_key(job.step_name or ""))
        ],
        [
            Dependency(parent, child, outcome is not None)
            for parent, child, outcome in StepDependency.objects.using(database)
            .filter(child__workflow_id=workflow.pk)
            .order_by("child_id", "position")
            .values_list("parent_id", "child_id", "outcome")
        ],
    )
    return {
        "graph": graph_svg(
            graph,
            lambda job_id: reverse(f"{admin_site}:leasequeue_job_change", args=[job_id]),
            _("Graph of workflow %s") % workflow,
        ),
        "steps": [
            _step_row(jobs[placed.step.id], graph.upstream[placed.step.id], admin_site)
            for placed in graph.steps
        ],
        "all_steps_url": steps_url,
    }


def step_counts(workflow: WorkflowRun, database: str) -> dict[str, int]:
    """The workflow's steps by status, callbacks included, as the page lists them (one pass
    over its steps' index, once per page: the counts line and the table share it)."""
    counts = getattr(workflow, "step_counts", None)
    if counts is None:
        rows = (
            Job.objects.using(database)
            .filter(workflow_id=workflow.pk)
            .values("status")
            .annotate(n=Count("id"))
            .order_by()
        )
        counts = {row["status"]: row["n"] for row in rows}
        workflow.step_counts = counts  # type: ignore[attr-defined]  # read back above
    return counts


def _counts(workflow: WorkflowRun, steps_url: str, database: str) -> list[dict[str, Any]]:
    """The workflow's steps by status, in lifecycle order."""
    by_status = step_counts(workflow, database)
    return [
        {
            "badge": show.status_badge(status),
            "count": by_status[status],
            "url": f"{steps_url}&status__exact={status}",
        }
        for status in JobStatus
        if by_status.get(status)
    ]


def _step_row(job: Job, upstream: list[GraphStep], admin_site: str) -> dict[str, Any]:
    """One line of the step table."""
    return {
        "url": reverse(f"{admin_site}:leasequeue_job_change", args=[job.pk]),
        "name": job.step_name,
        # The function's name; the whole path in the cell's tooltip.
        "task": job.task_path.rpartition(".")[2],
        "task_path": job.task_path,
        "badge": show.status_badge(job.status, job.cancel_requested),
        "run_if": RunIf(job.run_if).label if job.run_if else "",
        "upstream": ", ".join(step.name for step in upstream),
        "attempts": f"{job.attempt} / {job.max_attempts}",
        "run_time": show.run_time(job.status, job.started_at, job.finished_at, timezone.now()),
    }
