"""Tasks that report progress and checkpoints, run by real workers in the progress tests."""

import asyncio
import json
import os
import time
from pathlib import Path

from django_leasequeue import task


@task(takes_context=True, max_attempts=1)
def stepped(context, steps, seconds_per_step):
    """A computation the browser watches: one progress report per step."""
    for done in range(1, steps + 1):
        time.sleep(seconds_per_step)
        context.progress(done, steps, f"Step {done} of {steps}")
    return steps


@task(takes_context=True, max_attempts=1)
def tight_loop(context, reports):
    """Reports progress as fast as it can; returns how long that took."""
    started = time.monotonic()
    for done in range(1, reports + 1):
        context.progress(done, reports, f"report {done}")
    return time.monotonic() - started


@task(takes_context=True, max_attempts=1)
async def atight_loop(context, reports):
    started = time.monotonic()
    for done in range(1, reports + 1):
        await context.aprogress(done, reports, f"report {done}")
    return time.monotonic() - started


@task(takes_context=True, max_attempts=1)
def report_until_refused(context, path):
    """Reports progress until a write is refused, then tells the test (through a file) when."""
    for tick in range(1, 2000):
        if not context.progress(tick, 2000, f"tick {tick}"):
            Path(path).write_text(
                json.dumps({"refused_at": tick, "lease_lost": context.lease_lost})
            )
            return tick
        time.sleep(0.05)
    return None


@task(takes_context=True, max_attempts=3, backoff_seconds=0.05)
def resume_after_crash(context):
    """Attempt 1 checkpoints and then hangs until killed; a later attempt returns what it found."""
    if context.last_checkpoint is not None:
        return {"resumed_from": context.last_checkpoint, "attempt": context.attempt}
    context.checkpoint({"done": 3, "pid": os.getpid()})
    context.progress(3, 6, "checkpointed")
    time.sleep(120)
    return None


@task(takes_context=True, max_attempts=3, backoff_seconds=0.05)
async def aresume_after_crash(context):
    if context.last_checkpoint is not None:
        return {"resumed_from": context.last_checkpoint, "attempt": context.attempt}
    await context.acheckpoint({"done": 3, "pid": os.getpid()})
    await context.aprogress(3, 6, "checkpointed")
    await asyncio.sleep(120)
    return None
