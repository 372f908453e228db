"""Tasks of the hooks' tests."""

import asyncio
import logging

from django_leasequeue import task
from tests.support.hook_examples import current_tenant

logger = logging.getLogger(__name__)


@task(takes_context=True)
def tenant_and_meta(context):
    """What a sync task sees, in its thread: the current tenant and the job's meta."""
    return {"tenant": current_tenant.get(), "meta": context.meta}


@task(takes_context=True)
async def async_tenant_and_meta(context):
    await asyncio.sleep(0)
    return {"tenant": current_tenant.get(), "meta": context.meta}


@task(max_attempts=2, backoff_seconds=0.05, takes_context=True)
def fails_once(context):
    """Fails its first attempt (logging why), succeeds the second."""
    logger.info("attempt %d starts", context.attempt)
    if context.attempt == 1:
        raise ValueError("first attempt fails")
    return "second time lucky"


@task(max_attempts=2, backoff_seconds=0.05)
async def always_fails():
    raise ValueError("never works")


@task(takes_context=True)
def snoozes_once(context):
    if not context.last_checkpoint:
        context.checkpoint(True)
        context.snooze(0.05)
    return "woke up"


@task
def plain(n):
    return n
