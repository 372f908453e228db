"""Which job a worker's log record is about: ``job_id``, ``task``, ``queue`` and ``attempt`` on
every record logged while a job is current, as ``extra`` fields a formatter can read (JSON
logs: docs/observability.md).

The job is held in a context variable: each job's runner is an asyncio task with a context of
its own, a sync task's thread runs in a copy of it, and so does a hook. A filter on each
handler copies the fields onto each record it handles; a record logged outside any job's
context has none.
Services that log about a job from elsewhere (the heartbeat, the signal dispatcher) make it
current around the call with ``about``.
"""

import contextlib
import contextvars
import logging
from collections.abc import Iterator
from typing import Any, NamedTuple


class JobLogFields(NamedTuple):
    job_id: str
    task: str
    queue: str
    attempt: int | None


_CURRENT: contextvars.ContextVar[JobLogFields | None] = contextvars.ContextVar(
    "leasequeue_job", default=None
)

FIELDS = JobLogFields._fields


def fields_of(job: Any) -> JobLogFields:
    """The fields of a ClaimedJob (or anything with its id, task_path, queue_name, attempt)."""
    return JobLogFields(str(job.id), job.task_path, job.queue_name, getattr(job, "attempt", None))


def set_current(job: Any) -> None:
    """Make ``job`` the current one for the rest of this context (a job's runner task)."""
    _CURRENT.set(fields_of(job))


@contextlib.contextmanager
def about(fields: JobLogFields) -> Iterator[None]:
    """Records logged inside are about this job."""
    token = _CURRENT.set(fields)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current() -> JobLogFields | None:
    return _CURRENT.get()


class JobFilter(logging.Filter):
    """Adds the current job's fields to each record a handler handles (never overwriting a
    field the call passed in ``extra``); lets every record through. Add it to a handler in
    ``LOGGING`` (``{"()": "django_leasequeue.runtime.job_logging.JobFilter"}``) for handlers
    made after a worker started; ``install`` adds it to those that exist then."""

    def filter(self, record: logging.LogRecord) -> bool:
        fields = _CURRENT.get()
        if fields is not None:
            attributes = record.__dict__
            for name, value in zip(FIELDS, fields, strict=True):
                attributes.setdefault(name, value)
        return True


_FILTER = JobFilter()


def install() -> None:
    """Add ``JobFilter`` to every handler this process has (runworkers' own on the root
    logger, the project's ``LOGGING`` ones): a filter, not a record factory, so that a call
    passing ``extra={"task": ...}`` keeps working (``Logger.makeRecord`` refuses an extra
    that overwrites an attribute the record has)."""
    loggers = [logging.root, *logging.root.manager.loggerDict.values()]
    for logger in loggers:
        for handler in getattr(logger, "handlers", ()):
            if not any(isinstance(f, JobFilter) for f in handler.filters):
                handler.addFilter(_FILTER)
