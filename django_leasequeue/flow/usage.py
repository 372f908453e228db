"""What flow-control limits use now, as the admin shows it: why a job waits, and the busiest
limited partitions with their running jobs against their caps."""

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.utils import formats, timezone
from django.utils.translation import gettext as _

from django_leasequeue.choices import JobStatus
from django_leasequeue.flow.admission import Hold, hold, limit_keys
from django_leasequeue.flow.limits import QueueLimit, Rate
from django_leasequeue.sql import flow as flow_sql
from django_leasequeue.sql.executor import execute
from django_leasequeue.sql.records import FlowUsage
from django_leasequeue.sql.statement import Statement

# How many partitions the admin's flow-control table shows.
BUSIEST = 10


def describe(held: Hold) -> str:
    """A hold in words: "waiting for a concurrency slot (2/2 running)", "rate limited until
    14:03:07"."""
    if held.until is not None:
        when = formats.time_format(timezone.localtime(held.until), "H:i:s")
        return _("rate limited until %(time)s") % {"time": when}
    if held.queue is not None:
        return _("waiting for a slot of queue %(queue)s (%(running)d/%(cap)d running)") % {
            "queue": held.queue,
            "running": held.running,
            "cap": held.cap,
        }
    return _("waiting for a concurrency slot (%(running)d/%(cap)d running)") % {
        "running": held.running,
        "cap": held.cap,
    }


def waiting_reasons(jobs: Iterable[Any], database: str) -> dict[UUID, str]:
    """Why each due, unclaimed job held to limits is not running yet (one query for all)."""
    now = timezone.now()
    waiting = [
        job
        for job in jobs
        if job.limits and job.status in JobStatus.claimable() and job.run_after <= now
    ]
    if not waiting:
        return {}
    usage = execute(_usage_of(limit for job in waiting for limit in job.limits), database)
    reasons = {}
    for job in waiting:
        # usage.now is None only when there are no limits to read, so nothing to hold.
        held = hold(job.limits, usage.running, usage.queue_running, usage.tats, usage.now)  # type: ignore[arg-type]
        if held is not None:
            reasons[job.pk] = describe(held)
    return reasons


def _usage_of(limits: Iterable[dict[str, Any]]) -> Statement[FlowUsage]:
    concurrency, queues, rates = limit_keys(limits)
    return flow_sql.flow_usage(concurrency_keys=concurrency, queues=queues, rate_keys=rates)


@dataclass(frozen=True, slots=True)
class PartitionUsage:
    """One limited partition (a task, a task's key, or a queue) as the admin lists it."""

    key: str
    limits: str  # "concurrency 2 · 10/s"
    running: int
    cap: int | None
    waiting: int
    state: str  # why its waiting jobs wait, or "" when they may start
    rate_limit: str | None = None  # the task's own rate limit ("10/s"); None without one


def overview(database: str, queue_limits: Mapping[str, QueueLimit]) -> list[PartitionUsage]:
    """The busiest limited partitions now, each with what it uses against its limits."""
    rows = execute(flow_sql.flow_overview(limit=BUSIEST), database)
    limits_of = {row["flow_key"]: json.loads(row["limits"] or "[]") for row in rows}
    configured = [
        {"key": limit.key, "queue": queue, "concurrency": limit.concurrency}
        for queue, limit in queue_limits.items()
        if limit.concurrency is not None
    ]
    usage = execute(
        _usage_of([*configured, *(item for items in limits_of.values() for item in items)]),
        database,
    )
    partitions = []
    for row in rows:
        limits = limits_of[row["flow_key"]]
        caps = [limit for limit in limits if "concurrency" in limit and "queue" not in limit]
        rates = [
            Rate(limit["rate"], limit["per"])
            for limit in limits
            if "rate" in limit and limit["key"].startswith("task:")
        ]
        held = hold(limits, usage.running, usage.queue_running, usage.tats, usage.now)  # type: ignore[arg-type]  # as above
        partitions.append(
            PartitionUsage(
                key=row["flow_key"],
                limits=_in_words(limits),
                running=row["running"],
                cap=caps[0]["concurrency"] if caps else None,
                waiting=row["waiting"],
                state=describe(held) if held is not None and row["waiting"] else "",
                rate_limit=str(rates[0]) if rates else None,
            )
        )
    return partitions


def _in_words(limits: list[dict[str, Any]]) -> str:
    words = []
    for limit in limits:
        where = f" ({limit['queue']})" if "queue" in limit else ""
        if "rate" in limit:
            words.append(f"{Rate(limit['rate'], limit['per'])}{where}")
        else:
            words.append(_("concurrency %(cap)d") % {"cap": limit["concurrency"]} + where)
    return " · ".join(words)


def queue_limit_rows(queue_limits: Mapping[str, QueueLimit], database: str) -> list[dict[str, Any]]:
    """Each queue's configured limits with what they use now: running of its concurrency cap,
    unfinished of its max_pending."""
    if not queue_limits:
        return []
    queues = sorted(queue_limits)
    usage = execute(flow_sql.flow_usage(concurrency_keys=(), queues=queues, rate_keys=()), database)
    pending = execute(flow_sql.pending_counts((), queues), database)
    return [
        {
            "queue": queue,
            "concurrency": queue_limits[queue].concurrency,
            "running": usage.queue_running.get(queue, 0),
            "rate_limit": queue_limits[queue].rate_limit,
            "max_pending": queue_limits[queue].max_pending,
            "pending": pending.get(("queue", queue), 0),
        }
        for queue in queues
    ]
