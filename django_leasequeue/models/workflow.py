"""The workflow tables: one row per enqueued workflow, and one row per dependency between two of
its steps (the steps themselves are jobs, with ``Job.workflow``).

Readiness comes from the dependency rows, never from a count: a step's rows are settled, and
the step released, by a trigger in the transaction that records its parent's outcome
(``leasequeue_step_status_changed``, sql/functions/). The workflow row's counters are kept by
the same trigger from the same status changes, so they cannot drift from the steps' statuses.
"""

from django.db import models
from django.db.models.functions import Now
from django.utils.translation import gettext_lazy as _

from django_leasequeue.choices import WorkflowStatus
from django_leasequeue.ids import uuid7


class WorkflowRun(models.Model):
    """One enqueued workflow (the ``Workflow`` built in code is its definition)."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    name = models.CharField(max_length=200, blank=True, db_default="")
    backend = models.CharField(max_length=100, db_default="default")
    status = models.CharField(
        max_length=16, choices=WorkflowStatus, db_default=WorkflowStatus.RUNNING
    )
    created_at = models.DateTimeField(db_default=Now())
    finished_at = models.DateTimeField(null=True, blank=True)
    steps_total = models.PositiveIntegerField()
    # Kept by the trigger: steps not finished yet, and steps that failed (or were cancelled,
    # callbacks skipped for their condition aside).
    steps_unfinished = models.PositiveIntegerField()
    steps_failed = models.PositiveIntegerField(db_default=0)
    cancel_requested = models.BooleanField(db_default=False)

    class Meta:
        db_table = "leasequeue_workflow"
        verbose_name = _("workflow")
        verbose_name_plural = _("workflows")
        # The admin's buttons on a workflow's page; viewing needs view_workflowrun.
        permissions = [
            ("cancel_workflow", _("Can cancel a workflow")),
            ("retry_workflow", _("Can retry the failed steps of a workflow")),
        ]
        indexes = [
            models.Index(
                fields=["created_at"],
                name="leasequeue_workflow_running",
                condition=models.Q(status=WorkflowStatus.RUNNING),
            ),
        ]

    def __str__(self) -> str:
        return self.name or str(self.id)


class StepDependency(models.Model):
    """``child`` waits for ``parent``; ``outcome`` is the parent's final status once it has
    finished (NULL: not yet). ``position`` orders a step's parents (a chord's results)."""

    id = models.BigAutoField(primary_key=True)
    parent = models.ForeignKey(
        "leasequeue.Job",
        models.CASCADE,
        related_name="dependencies_as_parent",
        db_constraint=False,
        db_index=False,  # the Meta indexes below cover it
    )
    child = models.ForeignKey(
        "leasequeue.Job",
        models.CASCADE,
        related_name="dependencies_as_child",
        db_constraint=False,
        db_index=False,  # the Meta indexes below cover it
    )
    position = models.PositiveIntegerField()
    outcome = models.CharField(max_length=16, null=True, blank=True)  # noqa: DJ001

    class Meta:
        db_table = "leasequeue_dependency"
        verbose_name = _("step dependency")
        verbose_name_plural = _("step dependencies")
        indexes = [
            # A finished step settles its rows and finds its children.
            models.Index(fields=["parent"], name="leasequeue_dependency_parent"),
            # Is any parent still unfinished? One probe, however many parents have finished.
            models.Index(
                fields=["child"],
                name="leasequeue_dep_unsettled",
                condition=models.Q(outcome__isnull=True),
            ),
            # A child's parents in order (upstream results, the admin's graph).
            models.Index(fields=["child", "position"], name="leasequeue_dependency_child"),
            # The first parent that did not succeed, when a child is released (rare rows).
            models.Index(
                fields=["child"],
                name="leasequeue_dep_unsuccessful",
                condition=models.Q(outcome__in=["failed", "cancelled"]),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.parent_id} -> {self.child_id}"
