"""The choices of the workflow tables, importable without the ORM (the builder, the runtime)."""

from django.db import models
from django.utils.translation import gettext_lazy as _


class WorkflowStatus(models.TextChoices):
    RUNNING = "running", _("Running")
    SUCCEEDED = "succeeded", _("Succeeded")
    FAILED = "failed", _("Failed")
    CANCELLED = "cancelled", _("Cancelled")


class RunIf(models.TextChoices):
    """When a step runs once its upstream steps have all finished."""

    SUCCEEDED = "succeeded", _("every upstream step succeeded")
    FINISHED = "finished", _("every upstream step finished, whatever its outcome")
    # The workflow's callbacks: upstream of them is every other step.
    ON_SUCCESS = "on_success", _("the workflow succeeded")
    ON_FAILURE = "on_failure", _("a step of the workflow failed or was cancelled")
    ON_COMPLETE = "on_complete", _("the workflow finished")


class Upstream(models.TextChoices):
    """What a step receives of its upstream steps' return values, before its own arguments."""

    CHAIN = "chain", _("its one upstream step's return value (chain)")
    CHORD = "chord", _("the list of its upstream steps' return values, in order (chord)")
