"""The fairness probe (``oldest_due_job``) from its last find passes over the entries a held
snapshot keeps at the head of the claim index for every job claimed since, on the index's own
pages; from the head it visits the row behind each (runtime/fairness.py)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from django_leasequeue.models import Job
from django_leasequeue.sql import jobs as jobs_sql
from tests.support.helpers import execute, held_snapshot, pages_read
from tests.support.tasks.basic import add

pytestmark = pytest.mark.django_db(transaction=True)

WAITING = 3000
CLAIMED = 2990


@pytest.fixture
def snapshot_held():
    with held_snapshot():
        yield


def test_from_its_last_find_the_probe_skips_the_jobs_claimed_under_a_held_snapshot(
    backend, snapshot_held
):
    add.get_backend().enqueue_many([(add, (n, n), {}) for n in range(WAITING)])
    with connection.cursor() as cursor:  # each a millisecond later than the one before
        cursor.execute(
            """
            UPDATE leasequeue_job SET run_after = now() - interval '1 hour'
                                                  + ordered.n * interval '1 millisecond'
            FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM leasequeue_job) AS ordered
            WHERE leasequeue_job.id = ordered.id
            """
        )
        cursor.execute(
            """
            UPDATE leasequeue_job SET status = 'running', worker_id = 'w'
            WHERE id IN (SELECT id FROM leasequeue_job ORDER BY run_after LIMIT %s)
            """,
            [CLAIMED],
        )
    first_live = Job.objects.filter(status="queued").order_by("run_after").first()

    from_head = jobs_sql.oldest_due_job(None)
    found = execute(from_head)
    assert (found.id, found.run_after) == (first_live.id, first_live.run_after)
    from_its_find = jobs_sql.oldest_due_job(None, not_before=found.run_after)
    assert execute(from_its_find) == found
    head_pages, bounded_pages = pages_read(from_head), pages_read(from_its_find)
    # From the head: the row behind each of the 2,990 entries (605 pages when written). From
    # its find: the entries before the bound are passed over on the index's own pages (about
    # 30 here), never their rows.
    assert head_pages > 300, head_pages
    assert bounded_pages < 60, bounded_pages

    # A job due before the bound that appears later: the probe from the head finds it.
    backdated = add.enqueue(9, 9).id
    Job.objects.filter(pk=backdated).update(run_after=timezone.now() - timedelta(hours=2))
    assert execute(from_its_find).id == first_live.id
    assert str(execute(jobs_sql.oldest_due_job(None)).id) == backdated
