"""The builders of ``history.sql``'s statements: the queues' history, rolled up by the workers'
sweep (runtime/history_rollup.py) and read by the dashboard (history/series.py)."""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django_leasequeue.sql.readers import first, rows
from django_leasequeue.sql.reads import ESTIMATE_CHAIN, ESTIMATE_PER_PROBE, ESTIMATE_SLICES
from django_leasequeue.sql.statement import Row, Statement, statement


@dataclass(frozen=True, slots=True)
class LatencyBuckets:
    """How a latency becomes a histogram bucket (the stored format: never change it without a
    migration of the rows): bucket 0 below ``base_ms``, bucket k >= 1 the latencies from
    ``base_ms * 2 ** ((k - 1) / steps)`` to ``base_ms * 2 ** (k / steps)``, ``last`` and above
    in the last one."""

    base_ms: float
    steps: int
    last: int


@dataclass(slots=True)
class HistorySlice:
    """What one queue did over one span: a stored row of the history, or minutes read live.

    ``measured_at`` is when its backlog was measured (None: not measured)."""

    queue_name: str
    start: datetime
    succeeded: int
    failed: int
    pickup_histogram: dict[int, int]
    run_histogram: dict[int, int]
    backlog: int | None = None
    backlog_estimated: bool = False
    measured_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class HistorySpan:
    """The minutes a rollup writes, [since, until); ``closed`` the end of the last minute it may
    write now; ``held`` whether this transaction holds the rollup's lock."""

    held: bool
    since: datetime
    until: datetime
    closed: datetime


@dataclass(frozen=True, slots=True)
class DueBacklog:
    backlog: int
    estimated: bool


def _histogram(buckets: list[int], counts: list[int]) -> dict[int, int]:
    return dict(zip(buckets, counts, strict=True))


def _array(values: Iterable[int]) -> str:
    """An integer array's text, as PostgreSQL reads it ('{3,5}')."""
    return "{" + ",".join(map(str, values)) + "}"


def _counts(histogram: dict[int, int]) -> list[int]:
    return [histogram[bucket] for bucket in sorted(histogram)]


def _slices(rows: list[Row]) -> list[HistorySlice]:
    return [
        HistorySlice(
            queue_name=row["queue_name"],
            start=row["start"],
            succeeded=row["succeeded"],
            failed=row["failed"],
            pickup_histogram=_histogram(row["pickup_buckets"], row["pickup_counts"]),
            run_histogram=_histogram(row["run_buckets"], row["run_counts"]),
            backlog=row.get("backlog"),
            backlog_estimated=bool(row.get("backlog_estimated")),
            measured_at=row["start"] if row.get("backlog") is not None else None,
        )
        for row in rows
    ]


def _span(rows: list[Row]) -> HistorySpan:
    return HistorySpan(**rows[0])


def _backlogs(rows: list[Row]) -> dict[str, DueBacklog]:
    return {row["queue_name"]: DueBacklog(row["backlog"], row["estimated"]) for row in rows}


def history_span(
    *, keep_seconds: float, settle_seconds: float, batch_minutes: int
) -> Statement[HistorySpan]:
    return statement(
        "history_span",
        _span,
        keep_seconds=keep_seconds,
        settle_seconds=settle_seconds,
        batch_minutes=batch_minutes,
    )


def history_mark() -> Statement[Row]:
    """``rolled_up_to`` (None before the first rollup) and the database's ``now``."""
    return statement("history_mark", first)


def history_minutes(
    *, since: datetime, until: datetime, buckets: LatencyBuckets
) -> Statement[list[HistorySlice]]:
    """Per queue and minute of [since, until), read from the job table (no backlog)."""
    return statement(
        "history_minutes",
        _slices,
        since=since,
        until=until,
        base_ms=buckets.base_ms,
        steps=buckets.steps,
        last_bucket=buckets.last,
    )


def due_backlog(
    *,
    exact_up_to: int,
    slices: int = ESTIMATE_SLICES,
    per_probe: int = ESTIMATE_PER_PROBE,
    chain: int = ESTIMATE_CHAIN,
) -> Statement[dict[str, DueBacklog]]:
    """Per queue with due jobs not started: how many, exact up to ``exact_up_to``, estimated
    above it as the queue summary's counts are (``reads.ESTIMATE_SLICES``)."""
    return statement(
        "due_backlog",
        _backlogs,
        exact_up_to=exact_up_to,
        slices=slices,
        per_probe=per_probe,
        chain=chain,
    )


def store_history_minutes(
    minutes: Sequence[HistorySlice], *, until: datetime
) -> Statement[list[Row]]:
    """Write minutes (one already written stays as it is) and move the mark to ``until``."""
    return statement(
        "store_history_minutes",
        rows,
        starts=[minute.start for minute in minutes],
        queue_names=[minute.queue_name for minute in minutes],
        succeeded=[minute.succeeded for minute in minutes],
        failed=[minute.failed for minute in minutes],
        pickup_buckets=[_array(sorted(minute.pickup_histogram)) for minute in minutes],
        pickup_counts=[_array(_counts(minute.pickup_histogram)) for minute in minutes],
        run_buckets=[_array(sorted(minute.run_histogram)) for minute in minutes],
        run_counts=[_array(_counts(minute.run_histogram)) for minute in minutes],
        backlogs=[minute.backlog for minute in minutes],
        backlogs_estimated=[minute.backlog_estimated for minute in minutes],
        until=until,
    )


def merge_history_spans(
    *, spans: Sequence[int], since: datetime, until: datetime
) -> Statement[list[Row]]:
    """Merge the minutes of each span (of these lengths in seconds) that ended in
    [since, until) into one row per queue."""
    return statement("merge_history_spans", rows, spans=list(spans), since=since, until=until)


def prune_history(*, spans: Sequence[int], keep_seconds: float, limit: int) -> Statement[list[Row]]:
    return statement(
        "prune_history", rows, spans=list(spans), keep_seconds=keep_seconds, limit=limit
    )


def history_rows(
    *, seconds: int, since: datetime, split: datetime, until: datetime
) -> Statement[list[HistorySlice]]:
    """Stored rows of ``seconds`` starting in [since, split), minutes in [split, until)."""
    return statement(
        "history_rows", _slices, seconds=seconds, since=since, split=split, until=until
    )
