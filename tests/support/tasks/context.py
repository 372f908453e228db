"""Tasks of the task-context tests: which plain methods of ``JobContext`` an ``async def`` task
may call on the worker's event loop."""

from collections.abc import Callable

from django_leasequeue import task


def _raised(call: Callable[[], object]) -> str | None:
    """The name of the exception ``call`` raised, or None."""
    try:
        call()
    except Exception as exc:
        return type(exc).__name__
    return None


def _enter_fenced_atomic(context) -> None:
    with context.fenced_atomic():
        pass


@task(takes_context=True)
async def calls_the_plain_methods_on_the_loop(context):
    """First attempt: call each plain method that waits for the database, save what each raised
    in a checkpoint, then snooze with the plain ``snooze()``. After the snooze: return it."""
    if context.last_checkpoint is not None:
        return context.last_checkpoint
    raised = {
        "progress": _raised(lambda: context.progress(1, 2, "from the loop")),
        "checkpoint": _raised(lambda: context.checkpoint({"from": "the loop"})),
        "fenced_atomic": _raised(lambda: _enter_fenced_atomic(context)),
    }
    await context.acheckpoint(raised)
    context.snooze(0.1)
