"""Tasks of the queue-control tests: pauses, expiry, snoozes and unique periods."""

import os
import time
from datetime import timedelta

from django_leasequeue import Snooze, task
from django_leasequeue.models import Job
from tests.support.models import Execution
from tests.support.tasks.values import build


@task(takes_context=True)
def recorded(context, n):
    """Record that this job ran (a pause or an expiry must keep it from running)."""
    Execution.objects.create(job_id=context.job_id, pid=os.getpid(), attempt=context.attempt)
    return n


@task(takes_context=True, expires_after=1)
def expiring(context, n):
    Execution.objects.create(job_id=context.job_id, pid=os.getpid(), attempt=context.attempt)
    return n


@task(expires_after=20, max_attempts=3, backoff_seconds=60)
def fails_with_a_late_retry():
    """Its retry (30 to 60 s after the failure) would start after its expiry (20 s; long enough
    for a loaded machine to start a worker and the first attempt)."""
    raise ValueError("not now")


@task(takes_context=True)
async def snoozes_three_times(context):
    """Snooze until three snoozes are counted (in the checkpoint, which survives them)."""
    snoozed = context.last_checkpoint or 0
    if snoozed < 3:
        await context.acheckpoint(snoozed + 1)
        await context.asnooze(0.2)
    return {"snoozed": snoozed}


@task(takes_context=True)
def snoozes_in_a_thread(context):
    """The sync twin: ``context.snooze`` the first time, succeed the second."""
    if not context.last_checkpoint:
        context.checkpoint(True)
        context.snooze(timedelta(milliseconds=100))
    return "done"


@task(max_snoozes=2)
def snoozes_forever():
    raise Snooze(0)


@task(takes_context=True)
def snoozes_once_usurped(context):
    """Wait until another worker took the job over, then snooze: a stale worker's write."""
    deadline = time.monotonic() + 30
    while not Job.objects.filter(pk=context.job_id, worker_id="usurper").exists():
        if time.monotonic() > deadline:
            return "never usurped"
        time.sleep(0.01)
    raise Snooze(60)


@task(takes_context=True, unique_key=lambda n: "hourly-report", unique_for=timedelta(hours=1))
def hourly_report(context, n):
    Execution.objects.create(job_id=context.job_id, pid=os.getpid(), attempt=context.attempt)
    return n


@task(unique_key=lambda n: f"briefly:{n}", unique_for=0.5)
def briefly_unique(n):
    return n


@task(unique_key=lambda name: name)
def keyed_hello(name):
    return f"hello {name}"


@task(unique_key=lambda name: name)
def keyed_fetch(name):
    return f"fetched {name}"


@task(unique_key=lambda name, returned=None: returned)
def keyed_by_what_it_is_given(name, returned=None):
    return name


@task(takes_context=True, max_attempts=1)
def snoozes_for(context, expression):
    """Snoozes once for what ``expression`` builds (``python_literal``; a list ``[days]`` for a
    timedelta), then succeeds."""
    if context.last_checkpoint is None:
        context.checkpoint("snoozing")
        seconds = build(expression)
        context.snooze(timedelta(days=seconds[0]) if isinstance(seconds, list) else seconds)
    return "woke"
