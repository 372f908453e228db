"""Exceptions the app raises; each names what went wrong and what was (not) written."""

from django_leasequeue.tasks_framework import InvalidTask


class InvalidTaskArguments(InvalidTask, TypeError):
    """Arguments of an enqueue that cannot be stored as JSON; nothing was written."""


class LeaseLost(Exception):
    """The worker no longer holds the job's lease: another claim superseded it or it expired.

    Whatever the caller tried to write was not applied.
    """


class LeaseExpired(Exception):
    """Recorded in a job's errors when its worker stopped renewing the lease (crash, kill -9)."""


class JobTimeout(Exception):
    """Recorded in a job's errors when an attempt ran longer than the task's timeout."""


class UndecodableJob(Exception):
    """Recorded when a claimed job's stored arguments cannot be read back (malformed, nested too
    deeply, of the wrong type); the job fails without retry and the worker goes on."""


class UnknownTask(Exception):
    """Recorded when a job's task path does not import to a task; the job fails without retry."""
