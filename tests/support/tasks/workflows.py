"""Tasks of the workflow tests. ``timed`` and ``gathered`` write their run (with the times they
saw) in the fenced transaction that completes them: one row per committed run, however often a
killed worker made them run again."""

import os
import time

from django.utils import timezone

from django_leasequeue import task
from tests.support.models import Execution, StepRun


def _commit_run(context, started, result):
    with context.fenced_atomic() as fence:
        StepRun.objects.create(
            job_id=context.job_id, pid=os.getpid(), started_at=started, finished_at=timezone.now()
        )
        fence.complete(result)
    return result


@task(takes_context=True, max_attempts=25, backoff_seconds=0.05)
def timed(context, milliseconds):
    started = timezone.now()
    Execution.objects.create(job_id=context.job_id, pid=os.getpid(), attempt=context.attempt)
    time.sleep(milliseconds / 1000)
    return _commit_run(context, started, milliseconds)


@task(takes_context=True, max_attempts=25, backoff_seconds=0.05)
def gathered(context, results):
    """A chord's callback: the sum of its group's results."""
    return _commit_run(context, timezone.now(), sum(results))


@task(takes_context=True, max_attempts=25, backoff_seconds=0.05)
def finale(context):
    """A workflow's on_complete callback."""
    return _commit_run(context, timezone.now(), sorted(context.upstream_results))


@task(max_attempts=3, backoff_seconds=0.05)
def fetch(url, seconds=0.0):
    time.sleep(seconds)
    return f"page of {url}"


@task(max_attempts=3, backoff_seconds=0.05)
def length(text):
    return len(text)


@task(max_attempts=3, backoff_seconds=0.05)
def total(numbers):
    return sum(numbers)


@task(max_attempts=3, backoff_seconds=0.05)
def add_one(number):
    return number + 1


@task(max_attempts=1)
def explode(message="boom"):
    raise RuntimeError(message)


@task(takes_context=True)
def report(context):
    return {"upstream": context.upstream_results}


@task
def noop():
    return None


@task
def collect(results):
    return results


def _tenant_of(account_id):
    """A key function that reads the database, as a project's may (an account's tenant)."""
    return f"tenant:{Execution.objects.filter(job_id__isnull=False).count()}:{account_id}"


@task(concurrency=5, concurrency_key=_tenant_of)
def per_tenant(account_id):
    return account_id


@task
def on_complete():
    """A task named as a callback's role: a step running it is numbered past the name."""
