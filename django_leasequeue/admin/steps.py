"""A workflow step as its job's admin page shows it: its workflow, and the steps just upstream
and downstream of it, each a link to its own job page.

A step may have thousands of neighbours (the callback of a 10,000-step group): the first
``NEIGHBOURS_SHOWN`` are listed and the rest counted, each through an index on the
dependency table.
"""

from dataclasses import dataclass
from uuid import UUID

from django.db.models import QuerySet
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from django_leasequeue.admin import display as show
from django_leasequeue.models import Job, WorkflowRun

NEIGHBOURS_SHOWN = 20


@dataclass(frozen=True)
class Neighbours:
    steps: list[Job]
    total: int


def _first(queryset: QuerySet[Job]) -> Neighbours:
    steps = list(queryset.only("id", "step_name", "status")[: NEIGHBOURS_SHOWN + 1])
    if len(steps) <= NEIGHBOURS_SHOWN:
        return Neighbours(steps, len(steps))
    return Neighbours(steps[:NEIGHBOURS_SHOWN], queryset.count())


def upstream(job_id: UUID, database: str) -> Neighbours:
    """The steps this one comes after, in the order of its dependencies."""
    return _first(
        Job.objects.using(database)
        .filter(dependencies_as_parent__child_id=job_id)
        .order_by("dependencies_as_parent__position")
    )


def downstream(job_id: UUID, database: str) -> Neighbours:
    """The steps that come after this one."""
    return _first(
        Job.objects.using(database)
        .filter(dependencies_as_child__parent_id=job_id)
        .order_by("step_name", "id")
    )


def step_links(neighbours: Neighbours, admin_site: str) -> SafeString | str:
    """Each step's name linked to its job page, with its status; "and N more" past the list."""
    if not neighbours.steps:
        return _("None")
    links = format_html_join(
        "",
        '<li><a href="{}">{}</a> {}</li>',
        (
            (
                reverse(f"{admin_site}:leasequeue_job_change", args=[step.pk]),
                step.step_name,
                show.status_badge(step.status),
            )
            for step in neighbours.steps
        ),
    )
    more = neighbours.total - len(neighbours.steps)
    tail = (
        format_html(
            "<li>{}</li>",
            ngettext("and %(count)d more", "and %(count)d more", more) % {"count": more},
        )
        if more
        else ""
    )
    return format_html('<ul class="lq-steps">{}{}</ul>', links, tail)


def workflow_link(workflow: WorkflowRun | None, admin_site: str) -> SafeString | str:
    """The step's workflow, linked to its page, with its status."""
    if workflow is None:
        return show.EMPTY
    url = reverse(f"{admin_site}:leasequeue_workflowrun_change", args=[workflow.pk])
    return format_html(
        '<a href="{}">{}</a> {}', url, str(workflow), show.workflow_badge(workflow.status)
    )
