"""Writing a workflow: its row, its steps (jobs) and their dependency rows, in one transaction,
the caller's when there is one. Every step is checked first, as ``enqueue`` checks a job;
nothing is written when one is refused. Steps with upstream steps wait; the others are due, and
workers are woken for them once the transaction commits."""

from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING

from django.db import transaction

from django_leasequeue.choices import JobStatus
from django_leasequeue.enqueue.service import Enqueuer
from django_leasequeue.exceptions import InvalidWorkflow
from django_leasequeue.flow import backpressure
from django_leasequeue.ids import uuid7_strs
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql import workflows as workflows_sql
from django_leasequeue.sql.executor import copy_rows, execute
from django_leasequeue.sql.records import NO_LIMITS, NewJob
from django_leasequeue.tasks_framework import TaskResult
from django_leasequeue.workflows.handle import WorkflowHandle

if TYPE_CHECKING:
    from django_leasequeue.workflows.builder import StepDefinition, Workflow


def enqueue_workflow(workflow: "Workflow") -> WorkflowHandle:
    if not workflow.steps:
        raise InvalidWorkflow("This workflow has no steps: add some before enqueueing it.")
    definitions = [*workflow.steps, *workflow.callbacks]
    enqueuer = _enqueuer(definitions)
    parents = _parents(workflow)
    has_dependents = {parent for step_parents in parents for parent in step_parents}
    resolved: dict = {}
    new_jobs = [
        enqueuer.new_job(
            job_id,
            definition.task,
            definition.args,
            definition.kwargs,
            resolved,
            upstream_arguments=1 if definition.upstream else 0,
        )
        for job_id, definition in zip(uuid7_strs(len(definitions)), definitions, strict=True)
    ]
    for definition, job in zip(definitions, new_jobs, strict=True):
        if job.unique_key is not None:
            raise InvalidWorkflow(
                f"Step {definition.name!r}: unique_key is not supported for workflow steps (a "
                "step is unique within its workflow)."
            )
    workflow_id = uuid7_strs(1)[0]
    database = enqueuer.config.database
    with transaction.atomic(using=database):
        # Each step, like any job, gets its hooks (a step carries its enqueuer's trace context).
        if enqueuer.hooks.before_enqueue or any(job.meta for job in new_jobs):
            new_jobs = enqueuer.with_meta(new_jobs)
        if backpressure.capped(new_jobs, enqueuer.config.queue_limits):
            enqueuer.refuse_past_caps(new_jobs, resolved)
        created_at = execute(
            workflows_sql.insert_workflow(
                workflow_id, workflow.name, enqueuer.alias, len(new_jobs)
            ),
            database,
        )["created_at"]
        now = execute(jobs_sql.database_now(), database)
        copy_rows(
            "copy_steps",
            (
                _step_row(
                    job, definition, workflow_id, now, parents[index], index in has_dependents
                )
                for index, (definition, job) in enumerate(zip(definitions, new_jobs, strict=True))
            ),
            database,
        )
        copy_rows(
            "copy_dependencies",
            (
                (new_jobs[parent].id, new_jobs[child].id, position)
                for child, step_parents in enumerate(parents)
                for position, parent in enumerate(step_parents)
            ),
            database,
        )
        due = [
            (job.task.queue_name, job.id)
            for job, step_parents in zip(new_jobs, parents, strict=True)
            if not step_parents and (job.task.run_after is None or job.task.run_after <= now)
        ]
        steps = EnqueuedSteps(
            {definition.name: job for definition, job in zip(definitions, new_jobs, strict=True)},
            partial(enqueuer.ready_result, enqueued_at=now),
        )
        transaction.on_commit(
            partial(enqueuer.after_commit, [job.task for job in new_jobs], due, steps.values),
            using=database,
        )
    return WorkflowHandle(
        workflow_id,
        backend_alias=enqueuer.alias,
        name=workflow.name,
        status_value="running",
        created_at=created_at,
        step_ids={step_name: job.id for step_name, job in steps.jobs.items()},
        steps=steps,
    )


class EnqueuedSteps(Mapping[str, TaskResult]):
    """A workflow's steps as just enqueued, step name -> ``TaskResult`` (``handle.steps`` until
    ``refresh()``). Each result is built when first read: a 10,000-step workflow's enqueue
    does not pay for 10,000 results nobody reads (about a tenth of its time)."""

    def __init__(self, jobs: dict[str, NewJob], result: Callable[[NewJob], TaskResult]) -> None:
        self.jobs = jobs
        self._result = result
        self._built: dict[str, TaskResult] = {}

    def __getitem__(self, step_name: str) -> TaskResult:
        built = self._built.get(step_name)
        if built is None:
            built = self._built[step_name] = self._result(self.jobs[step_name])
        return built

    def __iter__(self) -> Iterator[str]:
        return iter(self.jobs)

    def __len__(self) -> int:
        return len(self.jobs)

    def __repr__(self) -> str:
        return repr(dict(self))


def _enqueuer(definitions: "list[StepDefinition]") -> Enqueuer:
    """The enqueue path of the steps' backend (one for every step, and ours)."""
    aliases = {definition.task.backend for definition in definitions}
    if len(aliases) > 1:
        raise InvalidWorkflow(
            f"A workflow's steps run on one backend; these use {', '.join(sorted(aliases))}."
        )
    backend = definitions[0].task.get_backend()
    enqueuer = getattr(backend, "enqueuer", None)
    if not isinstance(enqueuer, Enqueuer):
        raise InvalidWorkflow(
            f"Workflows run on django_leasequeue's backend; {aliases.pop()!r} is "
            f"{type(backend).__name__}."
        )
    return enqueuer


def _parents(workflow: "Workflow") -> list[tuple[int, ...]]:
    """Each step's upstream steps, in order; a callback comes after every step."""
    every_step = tuple(range(len(workflow.steps)))
    return [
        *(definition.parents for definition in workflow.steps),
        *(every_step for _ in workflow.callbacks),
    ]


def _step_row(
    job: NewJob,
    definition: "StepDefinition",
    workflow_id: str,
    now: datetime,
    parents: tuple[int, ...],
    has_dependents: bool,
) -> tuple:
    task = job.task
    limits = job.limits or NO_LIMITS
    run_after = task.run_after or now
    return (
        job.id,
        job.task_path,
        task.queue_name,
        task.priority,
        task.backend,
        job.args_json,
        job.kwargs_json,
        run_after,
        now,
        job.max_attempts,
        job.timeout_seconds,
        job.backoff_seconds,
        limits.limits,
        limits.flow_key,
        limits.concurrency_key,
        limits.pending_key,
        JobStatus.WAITING if parents else JobStatus.QUEUED,
        workflow_id,
        definition.name,
        definition.run_if.value,
        definition.upstream.value if definition.upstream else None,
        has_dependents,
        job.meta_json,
        # A waiting step's expiry moves with it when it becomes due (the step trigger keeps
        # expires_at - run_after): expires_after counts from then.
        job.expires_at(run_after),
    )
