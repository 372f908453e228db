"""Pausing and resuming a queue: what ``backend.pause_queue``, ``manage.py leasequeue pause``
and the admin's buttons run.

A pause is a row of ``leasequeue_paused_queue``, which every claim statement reads. Pausing
takes that table's lock first: it waits for the claims in flight (each holds the table while it
runs) and holds off new ones until the pause commits, so when ``pause`` returns no claim that
could still miss the pause is running. Resuming deletes the row, then wakes workers for the
queue's due jobs (their wakeups were dropped while claims refused them).
"""

from functools import partial
from typing import TYPE_CHECKING

from django.db import OperationalError, transaction

from django_leasequeue import jsonargs
from django_leasequeue.exceptions import PauseFailed
from django_leasequeue.queue_names import queue_name_problem
from django_leasequeue.shown import shown
from django_leasequeue.sql import flow as flow_sql
from django_leasequeue.sql import queue_control as queue_control_sql
from django_leasequeue.sql.executor import execute

if TYPE_CHECKING:
    from django_leasequeue.backend import LeaseQueueBackend

# How long a pause waits for the claims in flight (and holds new ones off) before it gives up.
LOCK_WAIT_MILLISECONDS = 5000
# Wakeups a resume sends: enough to wake every idle worker; they poll for the rest.
RESUME_WAKEUPS = 1000
# A pause reason's limit, the same for every way in (the backend, the command, the admin's form
# and its POST): a line an operator reads in ``leasequeue status`` and the admin, not a report.
REASON_MAX_LENGTH = 1000


def check_queue_name(backend: "LeaseQueueBackend", name: object) -> str:
    """``name`` if it can name one of the backend's queues; ValueError saying why not."""
    if (problem := queue_name_problem(name)) is not None:
        raise ValueError(problem)
    if backend.queues and name not in backend.queues:
        declared = ", ".join(sorted(backend.queues))
        raise ValueError(f"Queue {shown(name)} is not one of the backend's QUEUES ({declared}).")
    return name  # type: ignore[return-value]  # a str: queue_name_problem found none


def check_reason(reason: object) -> str:
    """``reason`` if it can be a pause's reason; ValueError saying why not."""
    if not isinstance(reason, str) or (problem := jsonargs.text_problem(reason)) is not None:
        why = "not text" if not isinstance(reason, str) else problem
        raise ValueError(f"The reason {reason!r:.60} cannot be stored ({why}).")
    if len(reason) > REASON_MAX_LENGTH:
        raise ValueError(
            f"A pause reason is at most {REASON_MAX_LENGTH:,} characters; this one has "
            f"{len(reason):,}."
        )
    return reason


def pause_queue(backend: "LeaseQueueBackend", name: str, reason: str = "") -> bool:
    """Pause queue ``name`` and commit; True when it was not paused before."""
    check_queue_name(backend, name)
    check_reason(reason)
    database = backend.config.database
    if transaction.get_connection(database).in_atomic_block:
        raise RuntimeError(
            "pause_queue commits on its own: call it outside transaction.atomic() (inside one, "
            "its lock would hold every claim of every queue until that transaction ends)."
        )
    try:
        with transaction.atomic(using=database):
            execute(flow_sql.limit_lock_wait(milliseconds=LOCK_WAIT_MILLISECONDS), database)
            execute(queue_control_sql.lock_paused_queues(), database)
            return execute(queue_control_sql.pause_queue(name, reason), database)
    except OperationalError as exc:
        if getattr(exc.__cause__, "sqlstate", None) != "55P03":  # lock_not_available
            raise
        raise PauseFailed(
            f"Queue {name!r} was not paused: a transaction reading leasequeue_paused_queue did "
            f"not end within {LOCK_WAIT_MILLISECONDS / 1000:g} s (an idle transaction?)."
        ) from exc


def resume_queue(backend: "LeaseQueueBackend", name: str) -> bool:
    """Resume queue ``name``; on commit, wake workers for its due jobs. True if it was paused."""
    check_queue_name(backend, name)
    database = backend.config.database
    with transaction.atomic(using=database):
        resumed = execute(queue_control_sql.resume_queue(name), database)
        if resumed:
            due = execute(queue_control_sql.due_in_queue(name, limit=RESUME_WAKEUPS), database)
            wake = [(name, str(job_id)) for job_id in due]
            transaction.on_commit(partial(backend.wakeups.push, wake), using=database)
    return resumed


def paused_queues(backend: "LeaseQueueBackend") -> dict[str, str]:
    """``{queue: reason}`` of every paused queue."""
    rows = execute(queue_control_sql.paused_queues(), backend.config.database)
    return {queue: row["reason"] for queue, row in rows.items()}
