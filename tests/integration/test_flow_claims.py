"""The flow claim against the real database: caps hold under concurrent claimers, a slot comes
back when its lease expires, a rate bucket spaces starts, and unlimited claims leave limited jobs
alone."""

import asyncio
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection, connections, transaction

from django_leasequeue.models import Job
from django_leasequeue.runtime.database import Database
from django_leasequeue.runtime.flow_claims import FlowClaimer
from django_leasequeue.sql import flow as flow_sql
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.executor import execute
from tests.acceptance.harness import wait_until
from tests.support.helpers import claim_limited, try_claim, try_claim_batch
from tests.support.tasks import flow as flow_tasks

pytestmark = pytest.mark.django_db(transaction=True)


def _claimer(name: str, lease_seconds: float = 30) -> FlowClaimer:
    db = Database("default", prepared_statements=False, name=name, lease_seconds=lease_seconds)
    return FlowClaimer(db, None, worker_id=name, lease_seconds=lease_seconds)


async def _race(claimers: list[FlowClaimer], free: int) -> list[list]:
    try:
        return await asyncio.gather(*(claimer.claim(free) for claimer in claimers))
    finally:
        for claimer in claimers:
            await claimer.db.close()


def _running(**filters) -> int:
    return Job.objects.filter(status="running", **filters).count()


def test_concurrent_claimers_never_pass_a_concurrency_cap(backend):
    backend.enqueue_many([(flow_tasks.capped, (n, 0), {}) for n in range(40)])
    for _ in range(10):  # ten rounds of eight claimers on eight connections at once
        asyncio.run(_race([_claimer(f"racer-{i}") for i in range(8)], free=5))
        assert _running() == 2


def test_keyed_caps_hold_per_key_and_every_key_gets_its_slot(backend):
    backend.enqueue_many(
        [(flow_tasks.per_user, (user_id, n, 0), {}) for n in range(10) for user_id in range(5)]
    )
    for _ in range(3):
        asyncio.run(_race([_claimer(f"racer-{i}") for i in range(4)], free=10))
    running = Job.objects.filter(status="running")
    keys = list(running.values_list("concurrency_key", flat=True))
    assert sorted(keys) == [f"task:tests.support.tasks.flow.per_user:user:{u}" for u in range(5)]


def test_claimers_starting_at_different_partitions_share_one_queue_cap(backend):
    """Each claimer's round-robin starts at another user's jobs, so their candidates differ:
    only the queue's lock keeps the llm queue at two running calls."""
    backend.enqueue_many(
        [(flow_tasks.llm_call, (user_id, n, 0), {}) for n in range(4) for user_id in range(6)]
    )
    for _ in range(5):
        claimers = [_claimer(f"racer-{i}") for i in range(6)]
        for i, claimer in enumerate(claimers):
            claimer._after = f"task:tests.support.tasks.flow.llm_call:user:{i - 1}" if i else ""
        asyncio.run(_race(claimers, free=1))
        assert _running(queue_name="llm") == 2


def test_a_slot_freed_while_another_claimer_holds_its_lock_is_taken_when_that_one_commits(backend):
    """The race above, made certain: the llm queue's lock is held by another claimer (which
    may have counted its running jobs before one ended) when a claimer with room comes. That
    claimer waits for the holder to commit and takes the free slot, instead of skipping it and
    leaving it idle until the next poll."""
    ids = [flow_tasks.llm_call.enqueue(user_id, 0, 0).id for user_id in range(4)]
    first, second = claim_limited(free=10)  # the queue's two slots
    assert execute(jobs_sql.complete(first.lease, None))  # one ends: a slot is free
    [queue_key] = [limit["key"] for limit in Job.objects.get(pk=ids[3]).limits if "queue" in limit]
    holding, release = threading.Event(), threading.Event()

    def hold_the_queue_lock() -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_advisory_xact_lock(1279677507, hashtext(%s))", [queue_key]
                )
                holding.set()
                release.wait(30)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(2) as pool:
        holder = pool.submit(hold_the_queue_lock)
        assert holding.wait(10)
        claim = pool.submit(asyncio.run, _race([_claimer("late")], free=1))
        try:
            wait_until(lambda: claim.done() or _waiting_for_a_lock(), 10, "the claim to wait")
        finally:
            release.set()
        [claimed] = claim.result(10)
        holder.result(10)
    [job] = claimed
    assert str(job.id) in set(ids) - {str(first.id), str(second.id)}
    assert _running(queue_name="llm") == 2


def _waiting_for_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        return cursor.fetchone()[0] > 0


def _lease_ended(job_id: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT lease_expires_at <= now() FROM leasequeue_job WHERE id = %s", [job_id]
        )
        return cursor.fetchone()[0]


def test_a_slot_comes_back_when_its_holders_lease_expires(backend):
    first, second = (flow_tasks.single_slot.enqueue(n, 0).id for n in range(2))
    # Long enough for the first rescue to come while it holds, past a loaded machine's pause
    # of 2-3 s between the two claims (a 3 s lease was not).
    [held] = asyncio.run(_race([_claimer("doomed", lease_seconds=8)], free=5))[0]
    assert str(held.id) == first
    assert asyncio.run(_race([_claimer("rescuer")], free=5)) == [[]]
    # The holder was killed: its lease runs out (the database's clock), and its slot with it.
    wait_until(lambda: _lease_ended(first), 20, "the holder's lease to end")
    [[taken]] = asyncio.run(_race([_claimer("rescuer")], free=5))
    assert str(taken.id) == second


def test_a_rate_limit_spaces_starts_and_says_when_the_next_may_come(backend):
    # 6/m: ten seconds between starts, so that the second claim comes well within the first's
    # interval however loaded the machine is.
    slow = flow_tasks.rated.using(rate_limit="6/m")
    ids = [slow.enqueue(n).id for n in range(3)]
    claimer = _claimer("rater")

    async def two_claims():
        try:
            first = await claimer.claim(5)
            second = await claimer.claim(5)
            return first, second, claimer.wake_at
        finally:
            await claimer.db.close()

    asked_at = time.monotonic()
    first, second, wake_at = asyncio.run(two_claims())
    assert [str(job.id) for job in first] == ids[:1]
    assert second == []
    # The next start is due 10 s after the first, less half an interval of tolerance.
    assert 0.0 < wake_at - asked_at <= 10
    [bucket_key] = Job.objects.filter(pk=ids[0]).values_list("flow_key", flat=True)
    assert bucket_key == "task:tests.support.tasks.flow.rated"


def test_unlimited_claims_leave_limited_jobs_to_the_flow_claim(backend):
    limited = flow_tasks.capped.enqueue(1, 0).id
    plain = flow_tasks.unlimited.enqueue(1).id
    assert try_claim([limited]) == []
    assert [str(job.id) for job in try_claim_batch()] == [plain]
    [[claimed]] = asyncio.run(_race([_claimer("flow")], free=5))
    assert str(claimed.id) == limited


def test_the_flow_claim_reads_a_handful_of_rows_of_a_big_backlog(backend):
    """10,000 queued jobs of a concurrency=2 task: the claim walks the flow index (no sort of the
    backlog), reading a few rows per partition."""
    backend.enqueue_many([(flow_tasks.capped, (n, 0), {}) for n in range(10_000)])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE leasequeue_job")
        cursor.execute("BEGIN")
        statement = flow_sql.flow_candidates(None, after="", partitions=20, per_partition=10)
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {statement.query.sql}", statement.params)
        [[[plan]]] = cursor.fetchall()
        cursor.execute("ROLLBACK")
    nodes = list(_nodes(plan["Plan"]))
    scans = [node for node in nodes if node.get("Index Name") == "leasequeue_job_flow_order"]
    assert scans, json.dumps(plan)[:2000]
    assert not [
        node
        for node in nodes
        if node.get("Relation Name") == "leasequeue_job" and "Index" not in node["Node Type"]
    ]
    rows_read = sum(node["Actual Rows"] * node["Actual Loops"] for node in scans)
    assert rows_read <= 50, rows_read


def _nodes(node):
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)
