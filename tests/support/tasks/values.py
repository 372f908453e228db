"""Tasks that try to store a value given as a Python expression (``python_literal``): a value
that cannot be stored cannot be passed as an argument either, so the task builds it."""

import asyncio
import contextlib
import math
from typing import Any

from django_leasequeue import task


def python_literal(value: Any) -> str:
    """An expression that ``build`` turns back into ``value`` exactly: NaN, infinities and
    integers too long for ``repr`` included, and long runs of one character kept short."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return hex(value)  # no digit limit for powers of two
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
    if isinstance(value, str):
        if len(value) > 1000 and len(set(value)) == 1:
            return f"({value[0]!r} * {len(value)})"
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(python_literal(item) for item in value) + "]"
    if isinstance(value, dict):
        items = (f"{python_literal(key)}: {python_literal(item)}" for key, item in value.items())
        return "{" + ", ".join(items) + "}"
    raise TypeError(f"no literal for {type(value).__name__}")


def build(expression: str) -> Any:
    return eval(expression, {"__builtins__": {"float": float}})  # test values only


@task(max_attempts=3, backoff_seconds=0.01)
def returns(expression):
    return build(expression)


@task(takes_context=True, max_attempts=3, backoff_seconds=0.01)
def saves_checkpoint(context, expression):
    context.checkpoint(build(expression))
    return "saved"


@task(takes_context=True, max_attempts=3, backoff_seconds=0.01)
async def asaves_checkpoint(context, expression):
    await context.acheckpoint(build(expression))
    return "saved"


@task(takes_context=True, max_attempts=3, backoff_seconds=0.01)
def reports(context, expression):
    context.progress(1, 2, build(expression))
    return "reported"


@task(takes_context=True, max_attempts=3, backoff_seconds=0.01)
def swallows_refused_checkpoint(context, expression):
    """Catches the refusal and goes on: the attempt still fails (the checkpoint was lost)."""
    with contextlib.suppress(ValueError):
        context.checkpoint(build(expression))
    return "went on"


@task(max_attempts=1)
def raises(expression):
    raise ValueError(build(expression))


@task(queue_name="llm", max_attempts=3, backoff_seconds=0.01)
async def limited_sleep(seconds):
    """A job of the "llm" queue, held to its concurrency cap: claimed by the flow claim."""
    await asyncio.sleep(seconds)
    return seconds
