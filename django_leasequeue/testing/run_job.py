"""``run_job`` and ``arun_job``: one call of a task as a job, run here and now.

The call is checked as ``enqueue`` checks it (the task, its arguments and their number, what a
row can store; the backend's ``before_enqueue`` hooks add their meta), written as a job row in
the caller's transaction, claimed by id and run once through a drain's attempt (a real
``JobContext``, the hooks' ``wrap_run`` and ``after_finish``, the outcome written under the
lease), never retried. Its unique key, limits and expiry are left out: the test asked for this
run, whatever other jobs hold or use. Nothing is sent to Redis.
"""

import json
from typing import Any
from uuid import UUID

from asgiref.sync import sync_to_async
from django.db import transaction

from django_leasequeue.conf import lease_queue_backend
from django_leasequeue.ids import uuid7_strs
from django_leasequeue.runtime.worker_id import new_worker_id
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql import reads as reads_sql
from django_leasequeue.sql.clock import ANY_TIME, at_clock
from django_leasequeue.sql.executor import execute
from django_leasequeue.tasks_framework import Task
from django_leasequeue.testing.attempts import Attempts
from django_leasequeue.testing.drain import DrainClock


def run_job(task: Task, /, *args: Any, **kwargs: Any) -> Any:
    """Run ``task(*args, **kwargs)`` once as a job, here and now; returns its return value as
    stored (through JSON: a tuple comes back a list), or raises its exception as it was raised.

    A bad argument, or a wrong number of them, raises what ``task.enqueue`` raises. A
    ``takes_context`` task gets a real ``JobContext`` (attempt 1, progress and checkpoints
    written to the job's row). The job stays in the table, failed or succeeded (a snooze
    leaves it queued, and raises ``Snooze``).
    """
    backend = lease_queue_backend(task.backend)
    database = backend.config.database
    enqueuer = backend.enqueuer
    [job_id] = uuid7_strs(1)
    new_job = enqueuer.new_job(job_id, task, args, kwargs, {})
    with transaction.atomic(using=database):  # hooks may write, and may raise
        if enqueuer.hooks.before_enqueue or new_job.meta:
            [new_job] = enqueuer.with_meta([new_job])
        plain = new_job._replace(unique_key=None, limits=None, unique_for=None, expires_after=None)
        execute(jobs_sql.enqueue([plain]), database)
    clock = DrainClock(database).read()
    claim = jobs_sql.claim_by_ids(
        [UUID(job_id)],
        worker_id=new_worker_id("run_job"),
        lease_seconds=backend.config.lease_seconds,
    )
    claimed = execute(at_clock(claim, clock, ANY_TIME), database)
    if not claimed:
        raise RuntimeError(
            f"run_job could not claim its job of {new_job.task_path}: its queue "
            f"{task.queue_name!r} is paused."
        )
    ran = Attempts(backend, retry=False).run(claimed[0], clock)
    if ran.exception is not None:
        raise ran.exception
    [row] = execute(reads_sql.job_results([UUID(job_id)]), database)
    return None if row["result"] is None else json.loads(row["result"])


async def arun_job(task: Task, /, *args: Any, **kwargs: Any) -> Any:
    """``run_job`` for async code: it runs in the thread that owns the caller's database
    connection, as Django's async ORM calls do."""
    return await sync_to_async(run_job, thread_sensitive=True)(task, *args, **kwargs)
