"""The plan-cache decisions of migrations 0016-0022 and 0027, as tested facts.

The functions exist so that PostgreSQL plans their statements once per session rather than at
every call. A plan kept for a session must be right whatever the table holds later, so each
function either forces its generic plan from the first call (``plan_cache_mode``) and keeps it
on its index by turning sequential (and bitmap) scans off, or is written so that the generic
plan PL/pgSQL keeps from the sixth call (after five custom ones) reads by key. Each test runs
the function as the worker does, in a session of its own (a plan cache of its own), and reads
the plans that ran (``explain.py``).
"""

from typing import Any
from uuid import UUID

import psycopg
import pytest

from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.records import ClaimPosition, Lease
from django_leasequeue.sql.statement import Statement
from tests.plans.bench import PlanBench
from tests.plans.conftest import PlansDatabase
from tests.plans.explain import Plan
from tests.plans.guards import GUARDED_TABLES, guarded_indexes, outline
from tests.plans.names import (
    CLAIM_PLAIN,
    LEASE_SECONDS,
    PKEY,
    QUEUE_CLAIM,
    RUNNING,
    STATUS_QUEUE,
    claim_batch_of_queues,
    enqueue_plain,
)
from tests.plans.table import CHORD, analyse, fill, make_copies

# Marked so that pytest-django sets the test database up even when these run alone: the
# copies live in it (their own connections, not the test's).
pytestmark = pytest.mark.django_db

# PL/pgSQL plans a statement afresh (a custom plan) at each of its first five executions in a
# session; from the sixth it may keep a generic one (PostgreSQL's plan cache).
CUSTOM_PLANS = 5
CLAIM_LIMIT = 10


def _one(plans: list[Plan], fragment: str) -> Plan:
    [plan] = [plan for plan in plans if fragment in " ".join(plan.text.split())]
    return plan


def _poll(queues: list[str] | None, after: ClaimPosition | None = None) -> Statement[Any]:
    return jobs_sql.claim_batch(
        queues,
        CLAIM_LIMIT,
        worker_id="host-7",
        lease_seconds=LEASE_SECONDS,
        with_expiring=False,
        after=after,
    )


def _claim(bench: PlanBench, queues: list[str] | None) -> Plan:
    _, plans = bench.run(_poll(queues))
    return _one(plans, "UPDATE leasequeue_job AS job")


def _succeeded(leases: list[Lease]) -> list[tuple[Lease, str]]:
    return [(lease, "1") for lease in leases]


def _undone(bench: PlanBench) -> psycopg.Transaction:
    """A savepoint rolled back: the same rows can be completed again by the next call."""
    return bench.conn.transaction(force_rollback=True)


# 0018, 0020, 0021: plan_cache_mode = force_generic_plan.


def test_completions_run_the_generic_plan_by_primary_key_from_the_first_call(bench):
    """complete_many (0018): the generic plan from the first call, for any batch size, its
    rows found by the primary key (never the running-jobs index, 0017)."""
    for batch in (bench.sample.running, bench.sample.running[:3]):
        with _undone(bench):
            applied, plans = bench.run(jobs_sql.complete_many([(lease, "1") for lease in batch]))
        update = _one(plans, "UPDATE leasequeue_job AS job")
        assert len(applied) == len(batch)
        assert update.is_generic(), outline(update)
        assert guarded_indexes(update) == {PKEY}, outline(update)
        assert update.rows_read(PKEY) == len(batch), outline(update)


def test_claims_run_the_generic_plan_from_the_first_call(bench):
    """claim_by_ids (0020) by the primary key; claim_batch (0021) in an ordered walk of a
    claim index that stops at the LIMIT, whatever the LIMIT is taken for: over every queue
    leasequeue_job_claim_plain; over one, leasequeue_job_queue_claim, a walk of at most 1000
    due rows (this queue's jobs with an expiry come first here: their run_after is older)."""
    _, plans = bench.run(
        jobs_sql.claim_by_ids(
            bench.sample.due, worker_id=bench.sample.worker_id, lease_seconds=LEASE_SECONDS
        )
    )
    by_ids = _one(plans, "UPDATE leasequeue_job AS job")
    assert by_ids.is_generic(), outline(by_ids)
    assert guarded_indexes(by_ids) == {PKEY}, outline(by_ids)
    assert by_ids.rows_read(PKEY) == len(bench.sample.due), outline(by_ids)

    every_queue = _claim(bench, None)
    assert every_queue.is_generic(), outline(every_queue)
    assert guarded_indexes(every_queue) == {CLAIM_PLAIN, PKEY}, outline(every_queue)
    assert "Sort" not in every_queue.node_types(), outline(every_queue)
    assert every_queue.rows_read(CLAIM_PLAIN) == CLAIM_LIMIT, outline(every_queue)

    one_queue = _claim(bench, ["emails"])
    assert one_queue.is_generic(), outline(one_queue)
    assert guarded_indexes(one_queue) == {QUEUE_CLAIM, PKEY}, outline(one_queue)
    assert "Sort" not in one_queue.node_types(), outline(one_queue)
    assert CLAIM_LIMIT < one_queue.rows_read(QUEUE_CLAIM) <= 1000, outline(one_queue)


@pytest.mark.parametrize(("queues", "index"), [(None, CLAIM_PLAIN), (["emails"], QUEUE_CLAIM)])
def test_a_claim_from_a_position_walks_its_claim_index_from_there(bench, queues, index):
    """claim_batch after a position (0027): each arm (higher priorities, the position's own
    from it on, lower ones) a generic plan on the claim index, without a sort, stopping at
    the LIMIT."""
    claimed, _ = bench.run(_poll(queues))
    last = max(claimed, key=lambda row: (-row[3], row[18], row[0]))  # priority, run_after, id
    after = ClaimPosition(last[3], last[18], last[0])
    claimed_after, plans = bench.run(_poll(queues, after=after))
    arms = [plan for plan in plans if "UPDATE leasequeue_job AS job" in plan.text]
    assert len(claimed_after) == CLAIM_LIMIT and arms
    for arm in arms:
        assert arm.is_generic(), outline(arm)
        assert guarded_indexes(arm) == {index, PKEY}, outline(arm)
        assert "Sort" not in arm.node_types(), outline(arm)
    read = sum(arm.rows_read(index) for arm in arms)
    if queues is None:
        assert read == CLAIM_LIMIT, [outline(arm) for arm in arms]
    else:  # the walk of one queue reads ahead, up to 1000 due rows
        assert CLAIM_LIMIT <= read <= 1000 * len(arms), [outline(arm) for arm in arms]


def test_claim_of_several_queues_is_planned_at_every_execution(plans_db: PlansDatabase):
    """claim_batch_of_queues (0021) is left to a statement planned at each execution: even
    prepared (the option prepared_statements), PostgreSQL's plan cache keeps planning it for
    its parameters, on leasequeue_job_claim_plain, rather than keep a generic plan."""
    bench = PlanBench(plans_db.params, plans_db.sample, prepared=True)
    try:
        with bench.rolled_back():
            for _ in range(CUSTOM_PLANS + 2):
                with _undone(bench):
                    claimed, plans = bench.run(claim_batch_of_queues(bench.sample))
                assert len(claimed) == CLAIM_LIMIT
                assert not plans[-1].is_generic(), outline(plans[-1])
                assert guarded_indexes(plans[-1]) == {CLAIM_PLAIN, PKEY}, outline(plans[-1])
    finally:
        bench.close()


# 0016, 0017, 0019: plans PL/pgSQL keeps from the sixth call.


def test_complete_steps_keeps_a_generic_plan_by_primary_key(bench):
    """complete_steps (0017, 0020): custom plans for five calls, then the generic one PL/pgSQL
    keeps; each finds the batch by the primary key, never through the running-jobs index
    (which holds every job claimed since the last vacuum: here 2,660)."""
    done = []
    for _ in range(CUSTOM_PLANS + 2):
        with _undone(bench):
            _, plans = bench.run(
                jobs_sql.complete_steps([(lease, "1") for lease in bench.sample.running_steps])
            )
        done.append(_one(plans, "WITH done AS"))
    assert [plan.is_generic() for plan in done] == [False] * CUSTOM_PLANS + [True, True]
    for plan in done:
        assert RUNNING not in plan.indexes(), outline(plan)
        assert plan.rows_read(PKEY) == len(bench.sample.running_steps), outline(plan)


def test_complete_steps_keeps_the_books_once_per_batch(bench):
    """complete_steps (0016): one update of the workflow's counters for the batch, and the
    row trigger stands aside (none of its statements runs)."""
    (row,), plans = bench.run(
        jobs_sql.complete_steps([(lease, "1") for lease in bench.sample.running_steps])
    )
    assert len(row[0]) == len(bench.sample.running_steps)
    texts = [" ".join(plan.text.split()) for plan in plans]
    assert sum("UPDATE leasequeue_workflow" in text for text in texts) == 1, texts
    assert not [text for text in texts if "steps_unfinished + unfinished_change" in text], texts


def _release_children(bench: PlanBench, parents: list[UUID]) -> list[Plan]:
    """The call complete_steps and the step trigger make (no named statement of its own)."""
    _, plans = bench.sql("SELECT * FROM leasequeue_release_children(%s::uuid[])", (parents,))
    return plans


def test_release_children_locks_the_children_by_key_on_its_kept_plan(bench):
    """release_children (0019): its lock of the children, once PL/pgSQL keeps a generic plan
    for it, still finds them by the primary key (written as a join, that plan merged them with
    an ordered scan of the whole job table)."""
    parents = [
        row[0]
        for row in bench.conn.execute(
            "SELECT id FROM leasequeue_job WHERE workflow_id = %s AND status = 'succeeded'"
            " ORDER BY id LIMIT 10",
            (CHORD,),
        )
    ]
    locks = []
    for _ in range(CUSTOM_PLANS + 2):
        locks.append(_one(_release_children(bench, parents), "SELECT 1 FROM leasequeue_job"))
    assert locks[-1].is_generic(), outline(locks[-1])
    for lock in locks:
        assert guarded_indexes(lock) == {PKEY, "leasequeue_dependency_parent"}, outline(lock)
        assert lock.rows_read(PKEY) == 1, outline(lock)  # the callback, the one child
        assert "Merge Join" not in lock.node_types(), outline(lock)


def test_unsettled_parent_probe_keeps_its_index_on_a_new_chords_statistics(bench):
    """release_children (0016): statistics taken just after a big chord was enqueued, every
    dependency row the callback's and unsettled, make a sequential scan look as if it stopped
    at its first row; the probe for an unfinished parent still goes through
    leasequeue_dep_unsettled, and reads one entry however many parents have settled since."""
    bench.sql("UPDATE leasequeue_dependency SET outcome = NULL")
    bench.sql("ANALYZE leasequeue_dependency")  # undone with the transaction, as the rest
    bench.sql("UPDATE leasequeue_dependency SET outcome = 'succeeded' WHERE position <= 9000")
    parents = [
        row[0]
        for row in bench.conn.execute(
            "SELECT parent_id FROM leasequeue_dependency WHERE position <= 10"
        )
    ]
    probe = _one(_release_children(bench, parents), "pending.outcome IS NULL")
    assert guarded_indexes(probe) == {"leasequeue_dep_unsettled"}, outline(probe)
    assert probe.rows_read("leasequeue_dep_unsettled") == 1, outline(probe)
    assert not probe.seq_scans() & GUARDED_TABLES, outline(probe)


# 0022: leasequeue_enqueue_plain.


def test_enqueue_plain_keeps_a_generic_plan_from_its_sixth_call(bench):
    """enqueue_plain_cached (0022): the INSERT is planned for five calls, then PL/pgSQL keeps
    its generic plan for the session; it reads no job row."""
    inserts = []
    for n in range(CUSTOM_PLANS + 2):
        _, plans = bench.run(enqueue_plain(f"0195f2a0-0000-7000-8000-0000000001{n:02d}"))
        inserts.append(_one(plans, "INSERT INTO leasequeue_job"))
    assert [plan.is_generic() for plan in inserts] == [False] * CUSTOM_PLANS + [True, True]
    for plan in inserts:
        assert not plan.scanned() & GUARDED_TABLES, outline(plan)


# 0020, 0021: a plan made while the table was nearly empty, kept once a backlog arrived.

GROWING = "leasequeue_plans_growing"


@pytest.fixture
def growing(plans_db: PlansDatabase):
    """A session on copies of the tables that hold three jobs, analysed so; its caller fills
    them later (``fill``), without analysing them again."""
    with psycopg.connect(**plans_db.params, autocommit=True) as builder:
        make_copies(builder, GROWING)
        fill(builder, {"backlog": 3})
        analyse(builder, GROWING)
        bench = PlanBench(plans_db.params, schema=GROWING)
        try:
            yield builder, bench
        finally:
            bench.close()
            builder.execute(f"DROP SCHEMA {GROWING} CASCADE")


def _leases(bench: PlanBench, where: str) -> list[Lease]:
    rows = bench.conn.execute(
        f"SELECT id, lease_version FROM leasequeue_job WHERE {where} ORDER BY id LIMIT 10"
    )
    return [Lease(job_id, version) for job_id, version in rows]


def test_plans_made_on_a_nearly_empty_table_keep_their_indexes_once_a_backlog_arrives(growing):
    """0020, 0021: the generic plans of the claims and completions, made while the table held
    three jobs, are still index walks once 72,000 jobs have arrived and before anything has
    analysed them again (a generic plan of claim_by_ids made so once joined the ids to a scan
    of the whole table: 80 ms per batch of 10 among 200,000 rows)."""
    builder, bench = growing
    early = _leases(bench, "true")
    calls = {
        "claim_by_ids": lambda ids: jobs_sql.claim_by_ids(
            ids, worker_id="host-1", lease_seconds=LEASE_SECONDS
        ),
        "complete_many": lambda leases: jobs_sql.complete_many(_succeeded(leases)),
        "complete_steps": lambda leases: jobs_sql.complete_steps(_succeeded(leases)),
    }
    with bench.rolled_back():  # each function planned, its plan kept, on the nearly empty table
        bench.run(calls["claim_by_ids"]([lease.job_id for lease in early]))
        bench.run(calls["complete_many"](early))
        _claim(bench, None)
        _claim(bench, ["default"])
        for _ in range(CUSTOM_PLANS + 1):
            bench.run(calls["complete_steps"](early))

    fill(builder, {"succeeded": 50_000, "backlog": 20_000, "running": 2_000})
    due = [
        row[0]
        for row in bench.conn.execute(
            "SELECT id FROM leasequeue_job WHERE status = 'queued' ORDER BY id DESC LIMIT 10"
        )
    ]
    running = _leases(bench, "status = 'running'")
    with bench.rolled_back():
        _, plans = bench.run(calls["claim_by_ids"](due))
        kept = {"claim_by_ids": _one(plans, "UPDATE leasequeue_job AS job")}
        _, plans = bench.run(calls["complete_many"](running))
        kept["complete_many"] = _one(plans, "UPDATE leasequeue_job AS job")
        _, plans = bench.run(calls["complete_steps"](running))
        kept["complete_steps"] = _one(plans, "WITH done AS")
        kept["claim_batch (every queue)"] = _claim(bench, None)
        kept["claim_batch (one queue)"] = _claim(bench, ["default"])
    reads = {
        "claim_by_ids": PKEY,
        "complete_many": PKEY,
        "complete_steps": PKEY,
        "claim_batch (every queue)": CLAIM_PLAIN,
        "claim_batch (one queue)": QUEUE_CLAIM,
    }
    for name, plan in kept.items():
        assert plan.is_generic(), f"{name}\n{outline(plan)}"
        assert not plan.seq_scans() & GUARDED_TABLES, f"{name}\n{outline(plan)}"
        assert plan.rows_read(reads[name]) == CLAIM_LIMIT, f"{name}\n{outline(plan)}"


def test_the_estimates_probes_planned_on_a_nearly_empty_table_keep_their_index(growing):
    """0026: the probes of leasequeue_index_probe (the estimates of big counts), their generic
    plans made while the table held three jobs, still walk leasequeue_job_status_queue once
    70,000 jobs have arrived. (Bounded by `id >= ... AND id < ...` instead of row comparisons,
    a generic plan made on 2,500 unanalysed rows walked the primary key over the range,
    reading every row of it from the table; these three analysed jobs do not lead the planner
    there, so this holds the plan that is right, not that regression.)"""
    builder, bench = growing
    estimate = "SELECT leasequeue_estimate_entries('queued', 'default', 16, 32, 4, true)"
    bench.sql(estimate)  # planned, the plans kept, on the nearly empty table
    fill(builder, {"succeeded": 50_000, "backlog": 20_000})
    [(count,)], plans = bench.sql(estimate)
    probes = [plan for plan in plans if "LIMIT entries" in " ".join(plan.text.split())]
    assert count > 2_000 and len(probes) > 16
    for plan in probes:
        assert plan.is_generic(), outline(plan)
        assert guarded_indexes(plan) == {STATUS_QUEUE}, outline(plan)
