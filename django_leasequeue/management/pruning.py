"""Deleting old finished jobs in batches (``manage.py prunejobs``), with progress for a terminal.

Each batch is its own short statement and transaction: no long lock on the table, and an
interrupted prune keeps what it deleted.
"""

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django_leasequeue.human_duration import duration
from django_leasequeue.sql import operator_actions as operator_actions_sql
from django_leasequeue.sql.executor import execute


@dataclass(frozen=True, slots=True)
class Progress:
    deleted: int
    total: int  # what there was to delete when the prune began
    elapsed_seconds: float

    @property
    def rate(self) -> float:
        """Rows deleted per second so far."""
        return self.deleted / self.elapsed_seconds if self.elapsed_seconds > 0 else 0.0

    @property
    def seconds_left(self) -> float | None:
        left = max(0, self.total - self.deleted)
        return left / self.rate if self.rate > 0 else None

    def line(self) -> str:
        """``Deleted 120,000 of 400,000 (30%), 41,200 rows/s, about 7 s left``."""
        share = f" ({self.deleted / self.total:.0%})" if self.total else ""
        left = self.seconds_left
        eta = "" if left is None else f", about {duration(left)} left"
        return f"Deleted {self.deleted:,} of {self.total:,}{share}, {self.rate:,.0f} rows/s{eta}"


def prune(
    database: str,
    *,
    statuses: Sequence[str],
    older_than_seconds: float,
    batch: int,
    on_progress: Callable[[Progress], None] | None = None,
) -> int:
    """Delete the matching jobs batch by batch; returns how many went. With ``on_progress``,
    the rows to delete are counted first (an index scan) and each batch reports progress."""
    total = 0
    if on_progress is not None:
        total = execute(
            operator_actions_sql.count_prunable(
                statuses=statuses, older_than_seconds=older_than_seconds
            ),
            database,
        )
    statement = operator_actions_sql.prune_finished(
        statuses=statuses, older_than_seconds=older_than_seconds, limit=batch
    )
    began = time.monotonic()
    deleted = 0
    while True:
        count = execute(statement, database)
        deleted += count
        if on_progress is not None:
            # Jobs finishing meanwhile may add to the total; never show more than 100%.
            total = max(total, deleted)
            on_progress(Progress(deleted, total, time.monotonic() - began))
        if count < batch:
            return deleted


def prune_workflows(database: str, *, older_than_seconds: float, batch: int) -> int:
    """Delete finished workflows older than the cutoff whose steps are all gone (run after
    ``prune``, which deletes the steps with the other jobs); returns how many went."""
    statement = operator_actions_sql.prune_workflows(
        older_than_seconds=older_than_seconds, limit=batch
    )
    deleted = 0
    while True:
        count = execute(statement, database)
        deleted += count
        if count < batch:
            return deleted
