"""``JobStatus``: the states of a job's life, usable without the ORM (protocol, runtime, views)."""

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
