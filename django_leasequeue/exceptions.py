"""Every exception the package defines, each a ``LeaseQueueError``; each names what went wrong
and what was (not) written. Django's exceptions stay second bases where a caller expects them
(``InvalidTaskArguments`` is an ``InvalidTask``), and Python's where the meaning is theirs (a
bad value is a ``ValueError``)."""

from datetime import timedelta

from django.core.exceptions import ImproperlyConfigured

from django_leasequeue.duration_rule import to_seconds
from django_leasequeue.tasks_framework import InvalidTask


class LeaseQueueError(Exception):
    """The base of every exception django-leasequeue defines: ``except LeaseQueueError`` catches
    what the package raises or records, and nothing else."""


class InvalidTaskArguments(LeaseQueueError, InvalidTask, TypeError):
    """Arguments of an enqueue that cannot be stored as JSON; nothing was written."""


class InvalidDuration(LeaseQueueError, InvalidTask, ValueError):
    """A duration no job can hold (see ``duration_rule``): not seconds or a timedelta, not
    finite, not positive, or ending past the last moment a job row holds. Raised where the
    duration is given (the task's options, ``.using()``, an enqueue, ``Snooze``); nothing was
    written."""


class UnstorableValue(LeaseQueueError, ValueError):
    """A value a job row cannot hold (see ``jsonargs``): a return value, checkpoint or progress
    report the worker refused before sending it. The attempt fails without retry, and the job's
    errors name ``what`` it was, the ``problem`` and ``where`` in the value it was found."""

    def __init__(self, what: str, problem: str, where: str = "") -> None:
        self.what, self.problem, self.where = what, problem, where
        super().__init__(f"{what}: {problem}{f' at {where}' if where else ''}")


class InvalidWorkflow(LeaseQueueError, InvalidTask):
    """A workflow that cannot be built or enqueued (a step of another workflow, a duplicate step
    name, a task of another backend, ...); nothing was written."""


class UpstreamFailed(LeaseQueueError):
    """Recorded in a workflow step's errors when it was cancelled without running: an upstream
    step it needed did not succeed ("upstream step fetch failed")."""


class LeaseLost(LeaseQueueError):
    """The worker no longer holds the job's lease: another claim superseded it or it expired.

    Whatever the caller tried to write was not applied.
    """


class LeaseExpired(LeaseQueueError):
    """Recorded in a job's errors when its worker stopped renewing the lease (crash, kill -9)."""


class JobTimeout(LeaseQueueError):
    """Recorded in a job's errors when an attempt ran longer than the task's timeout."""


class UndecodableJob(LeaseQueueError):
    """Recorded when a claimed job's stored arguments cannot be read back (malformed, nested too
    deeply, of the wrong type); the job fails without retry and the worker goes on."""


class UnknownTask(LeaseQueueError):
    """Recorded when a job's task path does not import to a task; the job fails without retry."""


class QueueFull(LeaseQueueError):
    """An enqueue refused by backpressure: the task's, the key's or the queue's ``max_pending``
    unfinished jobs already wait. Nothing of the enqueue was written.

    ``task`` is the task path (None when the queue's cap refused it), ``queue`` the queue name,
    ``key`` the task's ``max_pending_key`` value (None without one), ``cap`` the limit,
    ``pending`` the unfinished jobs found and ``adding`` the jobs the enqueue would have added
    under that cap (more than one from ``enqueue_many``): ``pending + adding > cap``. When
    ``adding > cap`` the batch alone is too big, however many jobs are unfinished.
    """

    def __init__(
        self,
        *,
        task: str | None,
        queue: str,
        key: str | None,
        cap: int,
        pending: int,
        adding: int = 1,
    ) -> None:
        self.task, self.queue, self.key, self.cap, self.pending = task, queue, key, cap, pending
        self.adding = adding
        if task is None:
            scope, holds = f"queue {queue!r}", "holds"
            limit = f'queue_limits["{queue}"]["max_pending"] = {cap}'
        elif key is None:
            scope, holds = f"task {task}", "has"
            limit = f"max_pending={cap}"
        else:
            scope, holds = f"task {task} for key {key!r}", "has"
            limit = f"max_pending={cap} per max_pending_key"
        if adding > cap:
            what = (
                f"the batch adds {adding} jobs to {scope}, more than its cap allows even with "
                f"none unfinished ({limit})"
            )
        elif adding > 1:
            what = (
                f"{scope} {holds} {pending} unfinished job(s), and the batch's {adding} more "
                f"would pass its cap ({limit})"
            )
        elif key is None:
            what = f"{scope} {holds} {pending} unfinished job(s) ({limit})"
        else:
            what = f"task {task} has {pending} unfinished job(s) for key {key!r} ({limit})"
        super().__init__(f"Queue full: {what}; nothing was enqueued.")


class JobExpired(LeaseQueueError):
    """Recorded when a job was not started by its expiry (``expires_after``, counted from its
    first ``run_after``), or its retry or snooze would start after it: the job ends failed
    without running again, and without consuming an attempt."""


class TooManySnoozes(LeaseQueueError):
    """Recorded when a job snoozed more than its task's ``max_snoozes`` times: it ends failed."""


class Snooze(LeaseQueueError):
    """Raise from a task to end the attempt and run the job again in ``seconds`` (a number or a
    ``timedelta``): the job goes back to queued, its attempt is not counted, its ``snoozes``
    are. Don't catch it in the task (``except Exception`` would).

    ``context.snooze(seconds)`` and ``await context.asnooze(seconds)`` raise it for you.
    """

    def __init__(self, seconds: float | timedelta) -> None:
        try:
            self.seconds = to_seconds(seconds, zero_allowed=True)
        except ValueError as exc:
            raise InvalidDuration(
                f"A snooze takes a duration of 0 seconds or more: it {exc}."
            ) from None
        super().__init__(f"Snoozed for {self.seconds:g}s.")


class InvalidSchedule(LeaseQueueError, ValueError):
    """A schedule that cannot tick: bad cron expression, time zone or interval."""


class InvalidScheduledCall(InvalidSchedule):
    """A scheduled task whose function needs arguments a tick cannot give."""


class ScheduleChanged(LeaseQueueError):
    """The schedule kept changing under "run now" (or was retired meanwhile)."""


class LimitError(LeaseQueueError, ValueError):
    """A declared limit that cannot be used; the message says which and why."""


class PauseFailed(LeaseQueueError):
    """A pause that could not take the paused-queue table's lock in time; nothing changed."""


class MetricsUnavailable(LeaseQueueError, ImproperlyConfigured):
    """Metrics were asked for, but prometheus-client is not installed."""
