"""``HistoryRollup``: the queues' history (``django_leasequeue/history``) written by the recover
sweep, on the sweep's own connection (no connection of its own: a worker's stop is bounded by
closing the ones it has, ``shutdown.py``).

Each sweep writes the minutes that ended since the last rollup, in one short transaction per
batch: it takes a lock only one worker can hold at a time (the others skip their turn), reads
the batch's minutes from the job table, writes them (a minute already written stays as it is)
with the backlog measured now for the last one, merges the 15-minute and hourly spans that
ended, moves the mark and deletes rows older than ``KEEP``. Behind after an outage, it catches
up batch after batch for half a second per sweep at most, from a week and a day back at most
(before the first rollup, from the first job finished since then).
"""

import logging
import time
from collections.abc import Collection
from dataclasses import replace
from datetime import timedelta

import psycopg

from django_leasequeue.history.buckets import BUCKETS
from django_leasequeue.history.series import BACKLOG_EXACT_UP_TO
from django_leasequeue.runtime.database import Database
from django_leasequeue.sql import history as history_sql
from django_leasequeue.sql.executor import aexecute
from django_leasequeue.sql.history import HistorySlice, HistorySpan

logger = logging.getLogger(__name__)

# How long the history is kept, whatever the jobs' retention: the dashboard's week, and a day.
KEEP = timedelta(days=8)
# The spans the minutes are merged into, in seconds (the dashboard's 24h and 7d intervals).
SPANS = (900, 3600)
# A minute is rolled up this long after it ended: a job's end is stamped with its
# transaction's start, and batched completions commit a moment after it.
SETTLE_SECONDS = 10.0
# Minutes per transaction, and transactions per sweep while catching up: each transaction
# holds the heartbeat's connection, so it stays short (tens of ms), and a sweep that spent
# BUSY_SECONDS leaves the rest to the next one.
BATCH_MINUTES = 15
BATCHES_PER_SWEEP = 100
BUSY_SECONDS = 0.5
# Rows deleted per batch, at most, when pruning.
PRUNE_BATCH = 5_000


class HistoryRollup:
    def __init__(self, db: Database, declared_queues: Collection[str]) -> None:
        self.db = db
        # Their backlog is recorded at every minute measured, at zero too: a minute with a row
        # tells the dashboard that the backlog was measured then.
        self.declared_queues = sorted(declared_queues)

    async def roll_up(self) -> None:
        """Write the minutes that ended (catching up a few batches when behind)."""
        started = time.monotonic()
        for _ in range(BATCHES_PER_SWEEP):
            behind = await self.db.transaction(self._batch, "history rollup")
            if not behind or time.monotonic() - started > BUSY_SECONDS:
                break

    async def _batch(self, conn: psycopg.AsyncConnection) -> bool:
        """One batch of minutes, in the caller's transaction; whether minutes remain behind."""
        span = await aexecute(
            history_sql.history_span(
                keep_seconds=KEEP.total_seconds(),
                settle_seconds=SETTLE_SECONDS,
                batch_minutes=BATCH_MINUTES,
            ),
            conn,
        )
        if not span.held or span.since >= span.until:
            return False
        minutes = await aexecute(
            history_sql.history_minutes(since=span.since, until=span.until, buckets=BUCKETS),
            conn,
        )
        if span.until == span.closed:
            minutes = await self._with_backlog(conn, span, minutes)
        await aexecute(history_sql.store_history_minutes(minutes, until=span.until), conn)
        await aexecute(
            history_sql.merge_history_spans(spans=SPANS, since=span.since, until=span.until),
            conn,
        )
        await aexecute(
            history_sql.prune_history(
                spans=(60, *SPANS), keep_seconds=KEEP.total_seconds(), limit=PRUNE_BATCH
            ),
            conn,
        )
        return span.until < span.closed

    async def _with_backlog(
        self, conn: psycopg.AsyncConnection, span: HistorySpan, minutes: list[HistorySlice]
    ) -> list[HistorySlice]:
        """The minutes with the backlog measured now given to the last one (every queue with a
        backlog, a row then, or declared gets one there; a minute rolled up late gets none)."""
        backlog = await aexecute(history_sql.due_backlog(exact_up_to=BACKLOG_EXACT_UP_TO), conn)
        last = span.until - timedelta(minutes=1)
        earlier = [minute for minute in minutes if minute.start != last]
        rows = {minute.queue_name: minute for minute in minutes if minute.start == last}
        for name in {*rows, *backlog, *self.declared_queues}:
            due = backlog.get(name)
            row = rows.get(name) or HistorySlice(name, last, 0, 0, {}, {})
            rows[name] = replace(
                row,
                backlog=due.backlog if due else 0,
                backlog_estimated=due.estimated if due else False,
            )
        return earlier + [rows[name] for name in sorted(rows)]
