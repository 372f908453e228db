"""The indexes the plans must read, and the statements both test modules run, built as the
worker builds them."""

from typing import Any

from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.readers import rows
from django_leasequeue.sql.statement import Statement, statement
from tests.plans.table import Sample

PKEY = "leasequeue_job_pkey"
CLAIM_PLAIN = "leasequeue_job_claim_plain"
CLAIM_EXPIRING = "leasequeue_job_claim_expiring"
QUEUE_CLAIM = "leasequeue_job_queue_claim"
QUEUE_DUE = "leasequeue_job_queue_due"
RUNNING = "leasequeue_job_running"
STATUS_QUEUE = "leasequeue_job_status_queue"
EXPIRY = "leasequeue_job_expiry"
# The head of each priority's jobs with an expiry (`ORDER BY expires_at` from now()) is
# written for leasequeue_job_claim_expiring; PostgreSQL 15 walks leasequeue_job_expiry from
# now() instead, filtering on the priority. Either range scan starts at now(): no expired row is
# read, which is what the two heads are for.
EXPIRING_HEAD = (EXPIRY,)
LEASE_SECONDS = 30.0


def enqueue_plain(job_id: str) -> Statement[Any]:
    """enqueue_plain_cached of one job with this id."""
    return statement(
        "enqueue_plain_cached",
        rows,
        id=job_id,
        task_path="app.tasks.send",
        queue_name="default",
        priority=0,
        backend="default",
        args="[]",
        kwargs="{}",
        run_after=None,
        max_attempts=3,
        timeout=None,
        backoff=1.0,
        expires_after=None,
        meta="{}",
    )


def claim_batch_of_queues(sample: Sample) -> Statement[Any]:
    """The poll of a worker of two queues."""
    return jobs_sql.claim_batch(
        ["default", "emails"],
        10,
        worker_id=sample.worker_id,
        lease_seconds=LEASE_SECONDS,
        with_expiring=False,
    )
