"""The estimates of big counts (leasequeue_estimate_entries: the queue summary's counts and the
backlog of the dashboard and the per-minute rollup) on backlogs of known shapes, written with
uuid7 ids made for chosen milliseconds: bulk enqueues (each one millisecond's burst of ids)
with idle time between them, and steady traffic. Seeded: the same ids at every run."""

import random
import uuid
from collections.abc import Callable

import pytest
from django.db import connection

from django_leasequeue.history.series import BACKLOG_EXACT_UP_TO
from django_leasequeue.sql import history as history_sql
from django_leasequeue.sql import reads as reads_sql
from django_leasequeue.sql.executor import execute

pytestmark = pytest.mark.django_db(transaction=True)

_RANDOM_BITS = 74
_HOUR_MS = 3_600_000
# A millisecond of the recent past: where every layout starts.
_START_MS = 1_796_000_000_000


def _uuid7(unix_ms: int, random_bits: int) -> uuid.UUID:
    """The uuid7 of this millisecond with these 74 random bits (as django_leasequeue.ids
    lays them out)."""
    value = (
        unix_ms << 80
        | 0x7 << 76
        | (random_bits >> 62) << 64
        | 0x2 << 62
        | random_bits & ((1 << 62) - 1)
    )
    return uuid.UUID(int=value)


def _bursts(rng: random.Random, offsets_ms: list[int], size: int) -> list[uuid.UUID]:
    """A bulk enqueue of ``size`` jobs at each offset: its ids spread over all the random bits
    of its millisecond."""
    return [
        _uuid7(_START_MS + offset, rng.getrandbits(_RANDOM_BITS))
        for offset in offsets_ms
        for _ in range(size)
    ]


def _one_burst(rng: random.Random) -> list[uuid.UUID]:
    return _bursts(rng, [0], 2_600)


def _four_bursts(rng: random.Random) -> list[uuid.UUID]:
    # Gaps of 5 ms, 300 ms and 1,600 ms between them.
    return _bursts(rng, [0, 5, 305, 1_905], 650)


def _twenty_bursts(rng: random.Random) -> list[uuid.UUID]:
    return _bursts(rng, sorted(rng.sample(range(_HOUR_MS), 20)), 500)


def _straggler_then_burst(rng: random.Random) -> list[uuid.UUID]:
    """One job left waiting, and an hour later a bulk enqueue: the burst is one slice's."""
    return _bursts(rng, [0], 1) + _bursts(rng, [_HOUR_MS], 2_600)


def _steady(rng: random.Random) -> list[uuid.UUID]:
    """50,000 jobs enqueued one by one over an hour."""
    return [
        _uuid7(_START_MS + rng.randrange(_HOUR_MS), rng.getrandbits(_RANDOM_BITS))
        for _ in range(50_000)
    ]


LAYOUTS: dict[str, Callable[[random.Random], list[uuid.UUID]]] = {
    "one burst of 2,600": _one_burst,
    "4 bursts of 650, 5/300/1,600 ms apart": _four_bursts,
    "20 bursts of 500 over an hour": _twenty_bursts,
    "50,000 steady over an hour": _steady,
    "1 job, then an hour later a burst of 2,600": _straggler_then_burst,
}


def _queued(queue: str, ids: list[uuid.UUID]) -> None:
    """Due jobs with these ids, in one statement: the ORM's ``bulk_create`` took 38 s for 50,000
    rows on Django 5.2 (7 s on 6.x)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """INSERT INTO leasequeue_job (id, task_path, queue_name, args, kwargs, run_after)
            SELECT id, 'tests.support.tasks.basic.add', %s, '[]', '{}',
                   statement_timestamp() - interval '1 minute'
            FROM unnest(%s::uuid[]) AS id""",
            [queue, ids],
        )


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_big_count_is_estimated_within_a_quarter_whatever_the_backlog_shape(layout):
    ids = LAYOUTS[layout](random.Random(38))
    _queued("bulk", ids)

    [summary] = execute(reads_sql.queue_summary())
    backlog = execute(history_sql.due_backlog(exact_up_to=BACKLOG_EXACT_UP_TO))["bulk"]

    print(
        f"{layout}: {len(ids)} jobs, summary {summary['queued']} "
        f"({summary['queued'] / len(ids) - 1:+.1%}), backlog {backlog.backlog} "
        f"({backlog.backlog / len(ids) - 1:+.1%})"
    )
    assert summary["estimated"] == ["queued"]
    assert summary["queued"] == pytest.approx(len(ids), rel=0.25)
    assert backlog.estimated
    assert backlog.backlog == pytest.approx(len(ids), rel=0.25)
