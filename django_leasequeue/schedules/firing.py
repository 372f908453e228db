"""What a schedule's job stores, and "run now" (the admin's action) through ``fire_schedule``."""

from functools import partial
from uuid import UUID

from django.db import transaction

from django_leasequeue.enqueue.service import Enqueuer
from django_leasequeue.exceptions import ScheduleChanged
from django_leasequeue.flow.limits import limit_columns
from django_leasequeue.ids import uuid7_strs
from django_leasequeue.models import Schedule
from django_leasequeue.schedules.declaration import Declaration
from django_leasequeue.sql.executor import execute
from django_leasequeue.sql.records import NewJob
from django_leasequeue.sql.schedules import JobFields, fire_schedule

# "Run now" reads the schedule's version and fires; a worker firing in between makes it read
# again, this many times at most.
_RUN_NOW_ATTEMPTS = 5


def job_fields(enqueuer: Enqueuer, declaration: Declaration) -> JobFields:
    task = declaration.task
    defaults = enqueuer.task_defaults(task)
    queue_limit = enqueuer.config.queue_limits.get(task.queue_name)
    return JobFields(
        queue_name=task.queue_name,
        priority=task.priority,
        backend=enqueuer.alias,
        max_attempts=defaults.max_attempts,
        timeout_seconds=defaults.timeout_seconds,
        backoff_seconds=defaults.backoff_seconds,
        # A scheduled task's limit keys get no arguments (its jobs have none to key on).
        limits=limit_columns(defaults.flow.job_limits(defaults.task_path, queue_limit, (), {}))
        if defaults.flow
        else None,
        expires_after=defaults.expires_after,
    )


def tick_meta(enqueuer: Enqueuer, declaration: Declaration, fields: JobFields, job_id: str) -> str:
    """The meta (JSON) of a tick's job: what the backend's ``before_enqueue`` hooks add for it
    (the schedule's trace context with OpenTelemetry). The hooks see the job as a plain
    enqueue's, with no arguments. Only called when some hook has ``before_enqueue``."""
    job = NewJob(
        job_id,
        declaration.task,
        declaration.task_path,
        [],
        {},
        "[]",
        "{}",
        fields.max_attempts,
        fields.timeout_seconds,
        fields.backoff_seconds,
        declaration.unique_key,
        fields.limits,
        fields.expires_after,
        None,
        {},
    )
    [job] = enqueuer.with_meta([job])
    return job.meta_json


def run_now(enqueuer: Enqueuer, declaration: Declaration) -> UUID | None:
    """Enqueue one job of the schedule now, subject to its overlap policy: returns the job's id,
    or None when the previous run is unfinished and the policy is "skip". Does not move the
    schedule's ticks. Workers are woken when the caller's transaction commits."""
    fields = job_fields(enqueuer, declaration)
    database = enqueuer.config.database
    for _ in range(_RUN_NOW_ATTEMPTS):
        version = (
            Schedule.objects.using(database)
            .filter(task_path=declaration.task_path, retired=False)
            .values_list("version", flat=True)
            .first()
        )
        if version is None:
            break
        [job_id] = uuid7_strs(1)
        meta = "{}"
        if enqueuer.hooks.before_enqueue:
            meta = tick_meta(enqueuer, declaration, fields, job_id)
        fired = execute(
            fire_schedule(
                declaration, fields, job_id=job_id, version=version, tick=None, meta=meta
            ),
            database,
        )
        if fired is None:
            continue
        if fired.job_id is not None:
            due = [(fields.queue_name, str(fired.job_id))]
            transaction.on_commit(
                partial(enqueuer.after_commit, [declaration.task], due, list), using=database
            )
        return fired.job_id
    raise ScheduleChanged(
        f"Schedule {declaration.task_path} changed while running it now (retired, or fired "
        "by workers in between); try again."
    )
