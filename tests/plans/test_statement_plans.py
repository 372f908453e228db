"""Each statement the worker runs to claim, renew, finish and sweep jobs, and each statement of
the functions it calls, reads the job tables through the index it was written for, on a table
with a busy deployment's statistics (``table.py``): a plan that leaves its index, or reads a
job table whole, fails here before it slows a deployment down."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from django_leasequeue.sql import flow as flow_sql
from django_leasequeue.sql import history as history_sql
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql import queue_control as queue_control_sql
from django_leasequeue.sql import reads as reads_sql
from django_leasequeue.sql.statement import Statement
from tests.plans.bench import PlanBench
from tests.plans.explain import Plan
from tests.plans.guards import GUARDED_TABLES, Reads, check, outline
from tests.plans.names import (
    CLAIM_EXPIRING,
    CLAIM_PLAIN,
    EXPIRING_HEAD,
    EXPIRY,
    LEASE_SECONDS,
    PKEY,
    QUEUE_CLAIM,
    QUEUE_DUE,
    RUNNING,
    STATUS_QUEUE,
    claim_batch_of_queues,
    enqueue_plain,
)
from tests.plans.table import CHORD, Sample

# Marked so that pytest-django sets the test database up even when these run alone: the
# copies live in it (their own connections, not the test's).
pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Case:
    """A statement built as the worker builds it, from the table's rows, and what each of the
    plans it runs must read: by a fragment of the statement's text (``""``: the statement
    itself, the last plan of the run)."""

    make: Callable[[Sample], Statement[Any]]
    reads: dict[str, Reads]
    paused: bool = False  # run while the queue "reports" is paused
    setup: str = ""  # SQL run first, in the same transaction
    rows: bool = True  # whether it acts on (returns) rows in this table


def _plain(*indexes: str, may: tuple[str, ...] = ()) -> dict[str, Reads]:
    return {"": Reads(indexes, may)}


def _claim_by_ids(sample: Sample) -> Statement[Any]:
    return jobs_sql.claim_by_ids(
        sample.due, worker_id=sample.worker_id, lease_seconds=LEASE_SECONDS
    )


def _fenced(builder: Callable[..., Statement[Any]], **params: Any) -> Callable[[Sample], Any]:
    return lambda sample: builder(sample.running[0], **params)


# The UPDATE inside leasequeue_claim_by_ids and leasequeue_claim_batch.
_CLAIM_UPDATE = "UPDATE leasequeue_job AS job"
# The statements of leasequeue_complete_steps and leasequeue_release_children.
_STEPS_DONE = "WITH done AS"
_SETTLE = "UPDATE leasequeue_dependency SET outcome = 'succeeded'"
_LOCK_CHILDREN = "SELECT 1 FROM leasequeue_job WHERE id = ANY(ARRAY("  # PL/pgSQL's PERFORM
_CHILDREN = "SELECT DISTINCT dependency.child_id"
_UNSETTLED_PROBE = "pending.outcome IS NULL"
_RELEASE = "UPDATE leasequeue_job AS child"
_COMPLETE_STEPS_READS = {
    _STEPS_DONE: Reads((PKEY, "leasequeue_workflow_pkey")),
    _SETTLE: Reads(("leasequeue_dependency_parent",)),
    _LOCK_CHILDREN: Reads((PKEY, "leasequeue_dependency_parent")),
    _CHILDREN: Reads(("leasequeue_dependency_parent",)),
    _UNSETTLED_PROBE: Reads(("leasequeue_dep_unsettled",)),
}
# The probes of leasequeue_index_probe, which the estimates of big counts run (queue_summary,
# due_backlog): ordered walks of one (status, queue) pair's stretch of ids, and the due share's
# rows by key.
_PROBE_FORWARD = "ORDER BY job.status, job.queue_name, job.id LIMIT entries"
_PROBE_BACKWARD = "ORDER BY job.status DESC, job.queue_name DESC, job.id DESC LIMIT entries"
_PROBE_DUE = "WHERE job.id = ANY(ids) AND job.run_after <= now()"
_PROBES = {_PROBE_FORWARD: Reads((STATUS_QUEUE,)), _PROBE_BACKWARD: Reads((STATUS_QUEUE,))}
# Every other member of the chord done (its books kept as complete_steps keeps them, the
# trigger told to stand aside), so that completing the ten running ones releases the callback.
_ALL_BUT_TEN_DONE = f"""
SELECT set_config('leasequeue.completing_steps', 'on', true);
WITH last AS (SELECT id FROM leasequeue_job WHERE workflow_id = '{CHORD}'
              AND status = 'running' ORDER BY id LIMIT 10)
UPDATE leasequeue_job SET status = 'succeeded', finished_at = now()
WHERE workflow_id = '{CHORD}' AND status IN ('running', 'queued')
  AND id NOT IN (SELECT id FROM last);
UPDATE leasequeue_dependency AS dependency SET outcome = 'succeeded'
FROM leasequeue_job AS parent
WHERE parent.id = dependency.parent_id AND parent.status = 'succeeded';
SELECT set_config('leasequeue.completing_steps', 'off', true);
"""


CASES: dict[str, Case] = {
    # The claim: by id (the wakeup path, and the flow claim), the poll, the oldest job first.
    "claim_by_ids": Case(_claim_by_ids, {_CLAIM_UPDATE: Reads((PKEY,))}),
    "claim_by_ids (flow claim)": Case(
        lambda s: jobs_sql.claim_by_ids(
            s.limited, worker_id=s.worker_id, lease_seconds=LEASE_SECONDS, flow_claim=True
        ),
        {_CLAIM_UPDATE: Reads((PKEY,))},
    ),
    "jobs_present": Case(lambda s: jobs_sql.jobs_present(s.due), _plain(PKEY)),
    "claim_batch (every queue)": Case(
        lambda s: jobs_sql.claim_batch(
            None, 10, worker_id=s.worker_id, lease_seconds=LEASE_SECONDS, with_expiring=False
        ),
        {_CLAIM_UPDATE: Reads((CLAIM_PLAIN, PKEY))},
    ),
    "claim_batch (one queue)": Case(
        lambda s: jobs_sql.claim_batch(
            ["emails"], 10, worker_id=s.worker_id, lease_seconds=LEASE_SECONDS, with_expiring=False
        ),
        {_CLAIM_UPDATE: Reads((QUEUE_CLAIM, PKEY))},
    ),
    "claim_batch_of_queues": Case(claim_batch_of_queues, _plain(CLAIM_PLAIN, PKEY)),
    "claim_batch_with_expiring": Case(
        lambda s: jobs_sql.claim_batch(
            None, 10, worker_id=s.worker_id, lease_seconds=LEASE_SECONDS
        ),
        _plain(CLAIM_PLAIN, CLAIM_EXPIRING, PKEY, may=EXPIRING_HEAD),
    ),
    "claim_batch_by_queue": Case(
        lambda s: jobs_sql.claim_batch_by_queue(
            ["default", "emails"], 10, worker_id=s.worker_id, lease_seconds=LEASE_SECONDS
        ),
        _plain(QUEUE_CLAIM, PKEY),
        paused=True,
    ),
    "oldest_due_job": Case(
        lambda s: jobs_sql.oldest_due_job(None),
        _plain(CLAIM_PLAIN, CLAIM_EXPIRING, may=EXPIRING_HEAD),
    ),
    "oldest_due_job_from_its_last_find": Case(
        lambda s: jobs_sql.oldest_due_job(None, not_before=s.oldest_due_run_after),
        _plain(CLAIM_PLAIN, CLAIM_EXPIRING, may=EXPIRING_HEAD),
    ),
    "oldest_due_job_by_queue": Case(
        lambda s: jobs_sql.oldest_due_job_by_queue(["default", "emails"]),
        _plain(f"{QUEUE_DUE}|{QUEUE_CLAIM}"),
        paused=True,
    ),
    "open_queues": Case(
        lambda s: queue_control_sql.open_queues(None),
        _plain(f"{QUEUE_DUE}|{QUEUE_CLAIM}"),
        paused=True,
    ),
    "due_by_queue": Case(lambda s: reads_sql.due_by_queue(), _plain(QUEUE_DUE)),
    # The counts over the cap (the 20,000 due jobs of three queues), estimated by probes.
    "queue_summary": Case(lambda s: reads_sql.queue_summary(), _PROBES),
    "due_backlog": Case(
        lambda s: history_sql.due_backlog(exact_up_to=2_000),
        {**_PROBES, _PROBE_DUE: Reads((PKEY,))},
    ),
    # The flow claim's reads (claim_by_ids above claims what they admit).
    "flow_candidates": Case(
        lambda s: flow_sql.flow_candidates(None, after="", partitions=10, per_partition=2),
        _plain("leasequeue_job_flow_order"),
    ),
    "flow_usage": Case(
        lambda s: flow_sql.flow_usage(
            concurrency_keys=s.flow_keys[:10], queues=["default"], rate_keys=[]
        ),
        _plain("leasequeue_job_concurrency", RUNNING),
    ),
    # The heartbeat and the lease holder's writes.
    "heartbeat": Case(
        lambda s: jobs_sql.heartbeat(s.running, lease_seconds=LEASE_SECONDS), _plain(PKEY)
    ),
    "progress": Case(_fenced(jobs_sql.progress, current=1, total=2, message="half"), _plain(PKEY)),
    "checkpoint": Case(_fenced(jobs_sql.checkpoint, data_json='{"page": 2}'), _plain(PKEY)),
    "lock_lease": Case(_fenced(jobs_sql.lock_lease), _plain(PKEY)),
    # Completions and the other ends of an attempt.
    "complete_many": Case(
        lambda s: jobs_sql.complete_many([(lease, "1") for lease in s.running]),
        {"UPDATE leasequeue_job AS job": Reads((PKEY,))},
    ),
    "complete_steps": Case(
        lambda s: jobs_sql.complete_steps([(lease, "1") for lease in s.running_steps]),
        _COMPLETE_STEPS_READS,
    ),
    "complete_steps (the callback released)": Case(
        lambda s: jobs_sql.complete_steps([(lease, "1") for lease in s.running_steps]),
        {
            **_COMPLETE_STEPS_READS,
            _RELEASE: Reads((PKEY, "leasequeue_dep_unsuccessful")),
        },
        setup=_ALL_BUT_TEN_DONE,
    ),
    "complete (fenced_atomic)": Case(_fenced(jobs_sql.complete, result=1), _plain(PKEY)),
    "fail": Case(
        _fenced(
            jobs_sql.fail,
            exception_class_path="app.Error",
            message="boom",
            traceback="",
            retryable=True,
            backoff_cap_seconds=60,
        ),
        _plain(PKEY),
    ),
    "snooze": Case(_fenced(queue_control_sql.snooze, seconds=5, max_snoozes=3), _plain(PKEY)),
    "hand_back": Case(_fenced(jobs_sql.hand_back), _plain(PKEY)),
    "finish_cancelled": Case(_fenced(jobs_sql.finish_cancelled), _plain(PKEY)),
    "expire_doomed": Case(
        lambda s: queue_control_sql.expire_doomed(s.due), _plain(PKEY), rows=False
    ),
    # The supervisor's end of a dead worker's leases, and the sweep.
    "expire_worker_leases": Case(
        lambda s: jobs_sql.expire_worker_leases(s.worker_id), _plain(RUNNING)
    ),
    "recover_expired": Case(
        lambda s: jobs_sql.recover_expired(limit=100, backoff_cap_seconds=60),
        _plain(RUNNING, PKEY),
    ),
    "expiring_jobs_waiting": Case(
        lambda s: jobs_sql.expiring_jobs_waiting(), _plain(f"{CLAIM_EXPIRING}|{EXPIRY}")
    ),
    "expire_jobs": Case(lambda s: queue_control_sql.expire_jobs(limit=100), _plain(EXPIRY, PKEY)),
    "stale_due_jobs": Case(
        lambda s: jobs_sql.stale_due_jobs(older_than_seconds=5, limit=100),
        _plain(CLAIM_PLAIN, CLAIM_EXPIRING, may=EXPIRING_HEAD),
    ),
    "stale_due_jobs_by_queue": Case(
        lambda s: jobs_sql.stale_due_jobs_by_queue(
            ["default", "emails"], older_than_seconds=5, limit=100
        ),
        _plain(QUEUE_CLAIM),
        paused=True,
    ),
    # The enqueue of one plain job on a session Django keeps: it reads no job row at all.
    "enqueue_plain_cached": Case(
        lambda s: enqueue_plain("0195f2a0-0000-7000-8000-0000000000ff"),
        {"INSERT INTO leasequeue_job": Reads(())},
    ),
}


def _plans_of(plans: list[Plan], fragment: str) -> list[Plan]:
    if not fragment:
        return plans[-1:]
    return [plan for plan in plans if fragment in " ".join(plan.text.split())]


@pytest.mark.parametrize("name", CASES)
def test_statement_reads_its_index(bench: PlanBench, name: str) -> None:
    case = CASES[name]
    if case.paused:
        bench.sql(
            "INSERT INTO leasequeue_paused_queue (queue_name, reason, paused_at)"
            " VALUES ('reports', 'plans', now())"
        )
    if case.setup:
        bench.sql(case.setup)
    result, plans = bench.run(case.make(bench.sample))

    if case.rows:
        assert result, f"{name} found no rows to act on: the table is not what its plan needs"
    for fragment, reads in case.reads.items():
        matching = _plans_of(plans, fragment)
        assert matching, f"{name} ran no statement with {fragment!r}; it ran:\n" + "\n".join(
            outline(plan) for plan in plans
        )
        for plan in matching:
            check(plan, reads)
    # The statements no guard names (a function's others) read no job table whole either.
    for plan in plans:
        assert not plan.seq_scans() & GUARDED_TABLES, outline(plan)
