"""Flow control (``flow.sql``): the flow claim's candidates, locks and usage, rate buckets,
``max_pending`` counts. The limits' column values come from ``flow.limits``; nothing here
imports flow."""

import json
from collections.abc import Iterable, Sequence
from datetime import datetime

from django_leasequeue.sql.readers import rows
from django_leasequeue.sql.records import FlowCandidate, FlowCandidates, FlowUsage
from django_leasequeue.sql.statement import Row, Statement, statement


def _flow_candidates(rows: list[Row]) -> FlowCandidates:
    jobs = [
        FlowCandidate(row["id"], row["flow_key"], row["queue_name"], json.loads(row["limits"]))
        for row in rows
    ]
    return FlowCandidates(jobs, frozenset(rows[0]["locked_keys"]) if rows else frozenset())


def flow_candidates(
    queues: Sequence[str] | None, *, after: str, partitions: int, per_partition: int
) -> Statement[FlowCandidates]:
    """Only inside a transaction: the locks it takes are held until it ends."""
    return statement(
        "flow_candidates",
        _flow_candidates,
        queues=None if queues is None else list(queues),
        after=after,
        partitions=partitions,
        per_partition=per_partition,
    )


def limit_lock_wait(*, milliseconds: int) -> Statement[list[Row]]:
    """Only inside a transaction: the limit ends with it (``SET LOCAL``)."""
    return statement("limit_lock_wait", rows, milliseconds=milliseconds)


def wait_for_flow_locks(keys: Iterable[str]) -> Statement[list[Row]]:
    """Only inside a transaction: waits for, then holds until it ends, each limit's lock."""
    return statement("wait_for_flow_locks", rows, keys=sorted(keys))


def _flow_usage(rows: list[Row]) -> FlowUsage:
    usage = FlowUsage({}, {}, {}, rows[0]["now"] if rows else None)
    for row in rows:
        if row["kind"] == "concurrency":
            usage.running[row["key"]] = row["running"]
        elif row["kind"] == "queue":
            usage.queue_running[row["key"]] = row["running"]
        else:
            usage.tats[row["key"]] = row["tat"]
    return usage


def flow_usage(
    *, concurrency_keys: Iterable[str], queues: Iterable[str], rate_keys: Iterable[str]
) -> Statement[FlowUsage]:
    return statement(
        "flow_usage",
        _flow_usage,
        concurrency_keys=sorted(concurrency_keys),
        queues=sorted(queues),
        rate_keys=sorted(rate_keys),
    )


def store_rate_buckets(tats: dict[str, datetime]) -> Statement[list[Row]]:
    """Only inside the transaction of ``flow_candidates``, with its locks held."""
    keys = sorted(tats)
    return statement("store_rate_buckets", rows, keys=keys, tats=[tats[key] for key in keys])


def lock_pending_keys(keys: Iterable[str]) -> Statement[list[Row]]:
    """Only inside a transaction: waits for, then holds until it ends, each key's enqueue lock."""
    return statement("lock_pending_keys", rows, keys=sorted(keys))


def pending_counts(
    keys: Iterable[str], queues: Iterable[str]
) -> Statement[dict[tuple[str, str], int]]:
    """Unfinished jobs per max_pending key, as ``("task", key)``, and per queue, as
    ``("queue", name)``."""
    return statement("pending_counts", _pending_by_key, keys=sorted(keys), queues=sorted(queues))


def _pending_by_key(rows: list[Row]) -> dict[tuple[str, str], int]:
    return {(row["kind"], row["key"]): row["pending"] for row in rows}


def flow_overview(*, limit: int) -> Statement[list[Row]]:
    """The busiest flow partitions: ``{flow_key, running, waiting, limits}`` (limits as JSON)."""
    return statement("flow_overview", rows, limit=limit)
