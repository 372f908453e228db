"""The poll claim (``claim_batch``) from a position: past the entries a held snapshot keeps at
the head of the claim index for every job claimed since, in priority order still, and blind to
a job that appears behind the position until a poll from the head (runtime/poll_bound.py)."""

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from django_leasequeue.models import Job
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.records import ClaimPosition
from tests.support.helpers import execute, held_snapshot, pages_read_inside
from tests.support.tasks.basic import add

pytestmark = pytest.mark.django_db(transaction=True)

WAITING = 3000
CLAIMED = 2990
LIMIT = 10


def _poll(queues=None, limit=LIMIT, after=None):
    return jobs_sql.claim_batch(
        queues, limit, worker_id="w", lease_seconds=30, with_expiring=False, after=after
    )


def _claimed_ids(statement) -> set[str]:
    """The jobs the statement claims, rolled back."""
    with transaction.atomic():
        ids = {str(job.lease.job_id) for job in execute(statement)}
        transaction.set_rollback(True)
    return ids


def _mark_claimed_in_claim_order(count: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE leasequeue_job SET status = 'running', worker_id = 'w'
            WHERE id IN (SELECT id FROM leasequeue_job
                         ORDER BY priority DESC, run_after, id LIMIT %s)
            """,
            [count],
        )


@pytest.mark.parametrize("queues", [None, ["default"]], ids=["every queue", "one queue"])
def test_from_a_position_a_poll_skips_the_jobs_claimed_under_a_held_snapshot(backend, queues):
    """One bulk enqueue: every job has the same run_after, and the position's id tells them
    apart."""
    backend.enqueue_many([(add, (n, n), {}) for n in range(WAITING)])
    with held_snapshot():
        _mark_claimed_in_claim_order(CLAIMED)
        last = Job.objects.filter(status="running").order_by("-run_after", "-id").first()
        waiting = list(
            Job.objects.filter(status="queued")
            .order_by("run_after", "id")[:LIMIT]
            .values_list("id", flat=True)
        )
        from_head = _poll(queues)
        from_position = _poll(queues, after=ClaimPosition(last.priority, last.run_after, last.id))
        assert _claimed_ids(from_head) == _claimed_ids(from_position) == {str(i) for i in waiting}
        index = "leasequeue_job_claim_plain" if queues is None else "leasequeue_job_queue_claim"
        head_pages = pages_read_inside(from_head, index=index)
        position_pages = pages_read_inside(from_position, index=index)
    # From the head: the row behind each of the 2,990 entries (120 pages when written). From
    # the position: a descent of the index to it (6).
    assert head_pages > 60, head_pages
    assert position_pages < 15, position_pages


def test_a_poll_from_a_position_keeps_priority_order_and_misses_only_what_is_behind_it(backend):
    """Higher priorities come first from the head, the position's own from it on, then the
    lower ones; a job of the position's priority due before it is found from the head."""
    low = backend.enqueue_many([(add.using(priority=0), (n, n), {}) for n in range(5)])
    backend.enqueue_many([(add.using(priority=5), (n, n), {}) for n in range(8)])
    _mark_claimed_in_claim_order(4)  # the first four of priority 5
    position = Job.objects.filter(status="running").order_by("-run_after", "-id").first()
    high = add.using(priority=9).enqueue(1, 1)
    behind = add.using(priority=5, run_after=timezone.now() - timedelta(hours=1)).enqueue(2, 2)
    mid_waiting = set(
        Job.objects.filter(priority=5, status="queued")
        .exclude(pk=behind.id)
        .values_list("id", flat=True)
    )
    assert len(mid_waiting) == 4
    after = ClaimPosition(position.priority, position.run_after, position.id)

    # Five slots: the higher job, then the position's priority from it on.
    assert _claimed_ids(_poll(limit=5, after=after)) == {high.id} | {str(i) for i in mid_waiting}
    # Enough for all: the lower priority too, but not the job behind the position.
    everything = {high.id} | {str(i) for i in mid_waiting} | {r.id for r in low}
    assert _claimed_ids(_poll(limit=20, after=after)) == everything
    # From the head, the job behind the position comes right after the higher one.
    assert _claimed_ids(_poll(limit=2)) == {high.id, behind.id}
