"""The choices of the tables (a job's status, a workflow's, how a step runs, a schedule's
overlap, a worker's state), usable without the ORM: the builder, the statements and the runtime
import them before Django's app registry is ready."""

from django.db import models
from django.utils.translation import gettext_lazy as _

from django_leasequeue.tasks_framework import TaskResultStatus


class JobStatus(models.TextChoices):
    # A workflow step whose upstream steps have not all finished: never claimed; it turns
    # queued (or cancelled) in the transaction that records its last parent's outcome.
    WAITING = "waiting", _("Waiting")
    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    RETRYING = "retrying", _("Retrying")
    SUCCEEDED = "succeeded", _("Succeeded")
    FAILED = "failed", _("Failed")
    CANCELLED = "cancelled", _("Cancelled")

    @classmethod
    def claimable(cls) -> list[str]:
        return [cls.QUEUED, cls.RETRYING]

    @classmethod
    def unfinished(cls) -> list[str]:
        return [cls.QUEUED, cls.RETRYING, cls.RUNNING]

    @classmethod
    def terminal(cls) -> list[str]:
        return [cls.SUCCEEDED, cls.FAILED, cls.CANCELLED]

    @property
    def django_status(self) -> TaskResultStatus:
        """The status Django's Tasks API reports for this one (docs/concepts.md)."""
        return _DJANGO_STATUS[self]


class CancelOutcome(models.TextChoices):
    """What a cancel did to a job it changed (the values of ``backend.cancel()``'s dict)."""

    CANCELLED = "cancelled", _("Cancelled")
    # Running: its worker was asked to stop; the job ends cancelled at the next heartbeat. (Up to
    # 0.x this was reported as "running", the job's status at the time.)
    CANCEL_REQUESTED = "cancel_requested", _("Cancel requested")


_DJANGO_STATUS = {
    JobStatus.WAITING: TaskResultStatus.READY,
    JobStatus.QUEUED: TaskResultStatus.READY,
    JobStatus.RETRYING: TaskResultStatus.READY,
    JobStatus.RUNNING: TaskResultStatus.RUNNING,
    JobStatus.SUCCEEDED: TaskResultStatus.SUCCESSFUL,
    JobStatus.FAILED: TaskResultStatus.FAILED,
    JobStatus.CANCELLED: TaskResultStatus.FAILED,
}


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


class Overlap(models.TextChoices):
    SKIP = "skip", _("skip while the previous run is unfinished")
    ALLOW = "allow", _("always enqueue")


class WorkerState(models.TextChoices):
    """A worker process as the registry sees it (``Worker.state``)."""

    ALIVE = "alive", _("Alive")
    # No heartbeat within the lease, or its supervisor saw it die.
    DEAD = "dead", _("Dead")
    # It stopped by itself (shutdown, end of a burst).
    STOPPED = "stopped", _("Stopped")
