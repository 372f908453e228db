"""Tasks of the testing helpers' tests (``django_leasequeue.testing``): each does one thing a
test can see in the test's own transaction."""

import time
import uuid
from datetime import timedelta

from django.contrib.auth.models import User

from django_leasequeue import Snooze, task
from tests.support.models import Receipt

# Receipts written by these tasks say who wrote them.
WRITER = "testing"


@task
def send_welcome(user_id, *, locale="en"):
    return f"welcome {user_id} ({locale})"


@task(queue_name="high", priority=7)
def urgent(n):
    return n


@task
def returns(value):
    """Returns what it is given (a tuple comes back a list, through the row's JSON)."""
    return value


@task
def pair(first, second):
    return (first, second)


@task
def writes_receipts(count):
    """Writes ``count`` rows, the business writes a test wants to see."""
    for _ in range(count):
        Receipt.objects.create(job_id=uuid.uuid4(), written_by=WRITER)
    return count


@task
def counts_receipts():
    """How many rows it sees: the test's uncommitted ones too, inside its transaction."""
    return Receipt.objects.filter(written_by=WRITER).count()


@task
async def acounts_receipts():
    """``counts_receipts`` through the async ORM."""
    return await Receipt.objects.filter(written_by=WRITER).acount()


@task(max_attempts=3, backoff_seconds=30)
def fails(message):
    """Writes a row, then raises: the row stays, as it does in a worker."""
    Receipt.objects.create(job_id=uuid.uuid4(), written_by=message)
    raise ValueError(message)


@task(max_attempts=2, backoff_seconds=0.01)
def fails_on_a_duplicate(username):
    """A statement of its own fails (a unique violation): the test's transaction goes on."""
    User.objects.create(username=username)
    User.objects.create(username=username)


@task
def counts_down(n):
    """Enqueues itself with ``n - 1`` until 0: a drain follows it to the end."""
    if n > 0:
        counts_down.enqueue(n - 1)
    return n


@task(takes_context=True, max_attempts=3, backoff_seconds=0.01)
def works_with_context(context, steps):
    """Reports progress, saves a checkpoint and fails its first attempt: the second resumes
    from the checkpoint. Returns what it saw."""
    for step in range(steps):
        context.progress(step + 1, steps, f"step {step + 1}")
    seen = context.last_checkpoint
    context.checkpoint({"attempt": context.attempt})
    if context.attempt == 1:
        raise RuntimeError("first attempt fails")
    return {"attempt": context.attempt, "checkpoint_seen": seen, "job_id": str(context.job_id)}


@task(takes_context=True)
async def aworks_with_context(context):
    await context.aprogress(1, 2, "half")
    await context.acheckpoint({"half": True})
    return {"attempt": context.attempt, "checkpoint": context.last_checkpoint}


@task(takes_context=True, max_snoozes=5)
def snoozes_once(context):
    if context.last_checkpoint is None:
        context.checkpoint("snoozed")
        raise Snooze(timedelta(minutes=5))
    return "after the snooze"


@task(timeout=0.05)
def outlives_its_timeout():
    time.sleep(0.1)
    return "too late"


@task(timeout=0.05)
async def aoutlives_its_timeout():
    import asyncio

    await asyncio.sleep(1)


@task(concurrency=1)
def capped(n):
    return n


@task(rate_limit="1/h")
def rate_limited(n):
    return n


@task(expires_after=timedelta(milliseconds=1))
def expires_at_once(n):
    return n


@task
def noop():
    return None


@task
def takes_a_task_argument(task):
    return task


@task(expires_after=timedelta(minutes=1))
def snoozes_past_its_expiry():
    raise Snooze(timedelta(hours=1))
