"""Backpressure: an enqueue past a ``max_pending`` cap is refused with QueueFull.

Race-free under concurrent enqueuers: each capped key's enqueue lock (a transaction-level
advisory lock) is taken before its unfinished jobs are counted, and held until the enqueue's
transaction ends, so two enqueuers never both see room for the last place.
"""

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from django_leasequeue.exceptions import QueueFull
from django_leasequeue.flow.limits import QueueLimit, TaskLimits
from django_leasequeue.sql import flow as flow_sql
from django_leasequeue.sql.executor import execute
from django_leasequeue.sql.records import NewJob, TaskKey


@dataclass(frozen=True, slots=True)
class _Cap:
    """One max_pending cap: a task's (per key or not), or a queue's (``task`` None)."""

    task: str | None
    queue: str
    key: str | None
    cap: int


def _caps_of(
    job: NewJob, task_limits: TaskLimits | None, queue_limit: QueueLimit | None
) -> list[tuple[tuple[str, str], _Cap]]:
    """``(("task", pending key) or ("queue", name), cap)`` for each cap the job counts towards."""
    caps = []
    queue = job.task.queue_name
    if job.limits is not None and job.limits.pending_key is not None and task_limits is not None:
        key = job.limits.pending_key
        user_key = key.removeprefix(f"task:{job.task_path}:")
        caps.append(
            (
                ("task", key),
                _Cap(
                    job.task_path,
                    queue,
                    user_key if task_limits.max_pending_key else None,
                    task_limits.max_pending,  # type: ignore[arg-type]  # set: a pending key
                ),
            )
        )
    if queue_limit is not None and queue_limit.max_pending is not None:
        caps.append((("queue", queue), _Cap(None, queue, None, queue_limit.max_pending)))
    return caps


def check(
    jobs: Sequence[NewJob],
    task_limits: Mapping[str, TaskLimits | None],
    queue_limits: Mapping[str, QueueLimit],
    returning_existing: Collection[TaskKey],
    database: str,
) -> None:
    """Raise QueueFull when these jobs would take a cap past its limit. Only inside the enqueue's
    transaction: the keys' locks it takes are held until that ends. Jobs whose task key is in
    ``returning_existing`` add nothing (the enqueue returns the job holding the key)."""
    new: Counter[tuple[str, str]] = Counter()
    caps: dict[tuple[str, str], _Cap] = {}
    for job in jobs:
        if job.task_key is not None and job.task_key in returning_existing:
            continue
        for name, cap in _caps_of(
            job, task_limits.get(job.task_path), queue_limits.get(job.task.queue_name)
        ):
            new[name] += 1
            caps[name] = cap
    if not new:
        return
    execute(flow_sql.lock_pending_keys(f"{kind}:{key}" for kind, key in new), database)
    task_keys = [key for kind, key in new if kind == "task"]
    queues = [key for kind, key in new if kind == "queue"]
    pending = execute(flow_sql.pending_counts(task_keys, queues), database)
    for name in sorted(new):
        cap = caps[name]
        if pending.get(name, 0) + new[name] > cap.cap:
            raise QueueFull(
                task=cap.task,
                queue=cap.queue,
                key=cap.key,
                cap=cap.cap,
                pending=pending.get(name, 0),
                adding=new[name],
            )


def capped(jobs: Sequence[NewJob], queue_limits: Mapping[str, QueueLimit]) -> bool:
    """Whether any of these jobs counts towards a max_pending cap (then ``check`` must run)."""
    return any(
        (job.limits is not None and job.limits.pending_key is not None)
        or getattr(queue_limits.get(job.task.queue_name), "max_pending", None) is not None
        for job in jobs
    )
