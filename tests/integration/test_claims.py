"""Claims: the CAS claim has exactly one winner, batch claims never double-claim or skip."""

import asyncio

import pytest
from django.db import connection

from django_leasequeue.models import Job
from django_leasequeue.runtime.connection import connect_async
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.executor import aexecute, execute
from django_leasequeue.sql.job_columns import CLAIMED_JOB_COLUMNS
from tests.support.helpers import (
    rows_read,
    rows_read_inside,
    run_in_threads,
    statistics_of_a_nearly_empty_table,
    statistics_of_finished_jobs,
)
from tests.support.tasks.basic import add

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_connections_racing_claim_by_ids_exactly_one_wins_every_time(backend):
    rounds = 60
    for _ in range(rounds):
        job_id = add.enqueue(1, 1).id

        def claim(i, job_id=job_id):
            return execute(
                jobs_sql.claim_by_ids([job_id], worker_id=f"racer-{i}", lease_seconds=30)
            )

        winners = [claimed for claimed in run_in_threads(2, claim) if claimed]
        assert len(winners) == 1
        assert winners[0][0].lease.lease_version == 1


def test_duplicate_ids_in_one_claim_are_claimed_once(backend):
    job_id = add.enqueue(1, 1).id
    claimed = execute(
        jobs_sql.claim_by_ids([job_id, job_id, job_id], worker_id="w", lease_seconds=30)
    )
    assert [str(job.id) for job in claimed] == [job_id]


def test_threads_racing_claim_batch_claim_every_job_exactly_once(backend):
    total = 600
    backend.enqueue_many([(add, (i, i), {}) for i in range(total)])

    def drain(i):
        mine = []
        while True:
            batch = execute(
                jobs_sql.claim_batch(["default"], 7, worker_id=f"batcher-{i}", lease_seconds=30)
            )
            if not batch:
                return mine
            mine.extend(job.id for job in batch)

    claimed = [job_id for ids in run_in_threads(4, drain) for job_id in ids]
    assert len(claimed) == total
    assert len(set(claimed)) == total
    assert sum(1 for ids in run_in_threads(1, drain) for _ in ids) == 0


def test_claim_batch_takes_higher_priority_first_then_oldest(backend):
    low = add.using(priority=-5).enqueue(0, 0).id
    first_default = add.enqueue(0, 1).id
    second_default = add.enqueue(0, 2).id
    high = add.using(priority=50).enqueue(0, 3).id
    # One at a time: the order a batch's rows come back in is the join's, not the claim's.
    claimed = [
        execute(jobs_sql.claim_batch(["default"], 1, worker_id="w", lease_seconds=30))
        for _ in range(4)
    ]
    assert [str(job.id) for [job] in claimed] == [high, first_default, second_default, low]


def test_claim_batch_only_takes_the_named_queues(backend):
    other = add.using(queue_name="other").enqueue(1, 2).id
    default = add.enqueue(1, 2).id
    claimed = execute(jobs_sql.claim_batch(["default"], 10, worker_id="w", lease_seconds=30))
    assert [str(job.id) for job in claimed] == [default]
    claimed = execute(jobs_sql.claim_batch(None, 10, worker_id="w", lease_seconds=30))
    assert [str(job.id) for job in claimed] == [other]


def test_async_connection_claims_and_heartbeats(backend):
    ids = [r.id for r in backend.enqueue_many([(add, (1, 2), {})] * 3)]

    async def claim_and_beat():
        conn = await connect_async("default")
        try:
            claimed = await aexecute(
                jobs_sql.claim_batch(["default"], 10, worker_id="async", lease_seconds=30), conn
            )
            reply = await aexecute(
                jobs_sql.heartbeat([job.lease for job in claimed], lease_seconds=30), conn
            )
            return claimed, reply
        finally:
            await conn.close()

    claimed, reply = asyncio.run(claim_and_beat())
    assert sorted(str(job.id) for job in claimed) == sorted(ids)
    assert claimed[0].args == [1, 2]
    assert reply.held == {job.id for job in claimed}
    assert reply.cancel_requested == frozenset()


def test_claims_read_only_their_jobs_when_the_statistics_are_of_finished_jobs(backend):
    """A backlog that arrived after the last ANALYZE of a table of finished jobs: a claim by id
    looks its jobs up by key (it walked all 10,000 once), and a poll reads its first rows."""
    statistics_of_finished_jobs(backend)
    backend.enqueue_many([(add, (1, n), {}) for n in range(10_000)])
    woken = list(Job.objects.order_by("-id").values_list("id", flat=True)[:10])
    by_ids = jobs_sql.claim_by_ids(woken, worker_id="w", lease_seconds=30)
    poll = jobs_sql.claim_batch(None, 10, worker_id="w", lease_seconds=30, with_expiring=False)
    assert rows_read_inside(by_ids) <= 20  # its 10 looked up, and updated
    assert rows_read_inside(poll) <= 40  # its 10, and locks re-read
    assert {job.id for job in execute(by_ids)} == set(woken)


def test_batch_writes_find_their_jobs_by_key_among_many_running_ones(backend):
    """With the statistics of a table of finished jobs (running ones look rare), a batch's
    completion and heartbeat were planned over the running-jobs index and read every running
    job (and, late in a drain, every entry claimed since the last vacuum) to write their 10."""
    statistics_of_finished_jobs(backend)
    backend.enqueue_many([(add, (1, n), {}) for n in range(3_000)])
    claimed = execute(
        jobs_sql.claim_batch(None, 3_000, worker_id="w", lease_seconds=30, with_expiring=False)
    )
    assert len(claimed) == 3_000
    batch = [job.lease for job in claimed[:10]]
    completion = jobs_sql.complete_many([(lease, "3") for lease in batch])
    heartbeat = jobs_sql.heartbeat(batch, lease_seconds=30)
    assert rows_read_inside(completion) <= 20  # its 10 looked up, and updated
    assert rows_read(heartbeat) <= 40  # its 10 looked up, locked, renewed
    assert execute(completion) == {lease.job_id for lease in batch}


def test_plans_cached_on_a_nearly_empty_table_still_find_a_later_backlogs_jobs_by_key(backend):
    """The claim by ids and the batch completion run on plans cached for the whole session. A
    worker that made them while the table held three jobs (a fresh install) must not keep a
    plan that scans the table once a backlog has arrived: with one, each claim and completion
    of 10 read every one of 3,000 jobs, until autovacuum analysed the table."""
    first = statistics_of_a_nearly_empty_table(backend)
    claimed = execute(jobs_sql.claim_by_ids(first, worker_id="w", lease_seconds=30))
    execute(jobs_sql.complete_many([(job.lease, "1") for job in claimed]))  # planned now
    backend.enqueue_many([(add, (1, n), {}) for n in range(3_000)])
    woken = list(Job.objects.filter(status="queued").values_list("id", flat=True)[:10])
    claim = jobs_sql.claim_by_ids(woken, worker_id="w", lease_seconds=30)
    assert rows_read_inside(claim) <= 20  # its 10 looked up, and updated
    claimed = execute(claim)
    assert {job.id for job in claimed} == set(woken)
    completion = jobs_sql.complete_many([(job.lease, "3") for job in claimed])
    assert rows_read_inside(completion) <= 20
    assert execute(completion) == {job.id for job in claimed}


@pytest.mark.parametrize("queues", [None, ["default"], ["default", "other", "default"]])
def test_a_poll_planned_on_a_nearly_empty_table_walks_a_later_backlog_from_its_head(
    backend, queues
):
    """The poll claim's plan is cached for the session (of every queue, or of one). Made while
    the table held three jobs, a draft's plan walked the every-queue claim index filtered on the
    queue, and read a whole backlog to find a queue's first 10 jobs. The poll of several queues
    is planned at every execution."""
    statistics_of_a_nearly_empty_table(backend)
    poll = jobs_sql.claim_batch(queues, 10, worker_id="w", lease_seconds=30, with_expiring=False)
    execute(poll)  # planned now, on three jobs
    backend.enqueue_many([(add, (1, n), {}) for n in range(3_000)])
    assert rows_read_inside(poll) <= 40  # its 10, and locks re-read
    queued = Job.objects.filter(status="queued").order_by("-priority", "run_after", "id")
    due = {job.id for job in queued[:10]}
    assert {job.id for job in execute(poll)} == due


def test_a_poll_of_one_queue_passes_jobs_with_an_expiry_but_walks_at_most_1000_rows(backend):
    """Jobs with an expiry ahead of the plain ones in claim order are left to the claim that
    reads them (claim_batch_with_expiring); the poll walks at most 1000 of them."""
    from tests.support.tasks import control as control_tasks

    backend.enqueue_many(
        [
            (control_tasks.expiring.using(priority=10, expires_after=600), (n,), {})
            for n in range(1_500)
        ]
    )
    plain = add.enqueue(1, 1).id
    poll = jobs_sql.claim_batch(
        ["default"], 10, worker_id="w", lease_seconds=30, with_expiring=False
    )
    assert rows_read_inside(poll) <= 1_000
    assert execute(poll) == []  # within its walk, only jobs with an expiry
    Job.objects.filter(expires_at__isnull=False).delete()
    assert [str(job.id) for job in execute(poll)] == [plain]


def test_the_installed_claim_functions_return_the_columns_of_the_one_list():
    """Every claim's columns are CLAIMED_JOB_COLUMNS: the statements' lists are made of it, and
    the functions the migrations installed (their text written out) must return the same."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT proc.proname, array_agg(arg.name ORDER BY arg.position)
            FROM pg_proc AS proc
            CROSS JOIN LATERAL unnest(proc.proargnames, proc.proargmodes)
                WITH ORDINALITY AS arg(name, mode, position)
            WHERE proc.proname IN ('leasequeue_claim_by_ids', 'leasequeue_claim_batch')
              AND arg.mode = 't'
            GROUP BY proc.proname
            """
        )
        returned = dict(cursor.fetchall())
    assert returned == {
        "leasequeue_claim_by_ids": list(CLAIMED_JOB_COLUMNS),
        "leasequeue_claim_batch": list(CLAIMED_JOB_COLUMNS),
    }
