"""Hook classes of the hooks' tests (``OPTIONS["hooks"]``), in the enqueuing test process and
in real workers. Workers write what the hooks saw to the JSON-lines file named by
``LEASEQUEUE_TEST_HOOK_LOG``."""

import contextlib
import contextvars
import json
import os
import threading
from collections.abc import Iterator
from typing import Any

# The tenant of the code running now: a view would set it from the request.
current_tenant: contextvars.ContextVar[str | None] = contextvars.ContextVar("tenant", default=None)

_write_lock = threading.Lock()


def record(**fields: Any) -> None:
    """Append one line to the hook log (workers; a no-op without the variable)."""
    path = os.environ.get("LEASEQUEUE_TEST_HOOK_LOG")
    if path:
        with _write_lock, open(path, "a") as log:
            log.write(json.dumps(fields, default=str) + "\n")


def read_log(path: Any) -> list[dict[str, Any]]:
    try:
        with open(path) as log:
            text = log.read()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]


class TenantHook:
    """The documented tenant hook: the tenant captured at enqueue, current while the job runs."""

    def before_enqueue(self, job):
        tenant = current_tenant.get()
        if tenant is not None:
            job.meta["tenant"] = tenant

    @contextlib.contextmanager
    def wrap_run(self, job, context):
        token = current_tenant.set(job.meta.get("tenant"))
        try:
            yield
        finally:
            current_tenant.reset(token)


class RefusingHook:
    """Refuses to enqueue a job whose meta says so, after writing a receipt of its own: the
    enqueue's transaction must take that back too."""

    def before_enqueue(self, job):
        job.meta["seen"] = True
        if job.meta.get("refuse"):
            from tests.support.models import Receipt

            Receipt.objects.create(job_id=job.id, written_by="refusing hook")
            raise PermissionError(f"refused {job.task_path}")


class RecordingHook:
    """Records each attempt's outcome (sync after_finish, in a thread) and what wrap_run saw."""

    @contextlib.contextmanager
    def wrap_run(self, job, context):
        entered_in = threading.current_thread().name
        try:
            yield
        except BaseException as exc:
            record(hook="wrap", job_id=job.id, attempt=job.attempt, raised=type(exc).__name__)
            raise
        record(hook="wrap", job_id=job.id, attempt=job.attempt, thread=entered_in, raised=None)

    def after_finish(self, job, outcome):
        record(
            hook="after_finish",
            job_id=job.id,
            attempt=job.attempt,
            outcome=outcome,
            thread=threading.current_thread().name,
        )


class AsyncRecordingHook:
    """The async twin: aafter_finish on the worker's loop."""

    async def aafter_finish(self, job, outcome):
        record(hook="aafter_finish", job_id=job.id, attempt=job.attempt, outcome=str(outcome))


class BrokenHook:
    """Fails everywhere it can: wrap_run itself, then (second hook) its exit, and after_finish."""

    def wrap_run(self, job, context):
        raise RuntimeError("wrap_run is broken")

    def after_finish(self, job, outcome):
        raise RuntimeError("after_finish is broken")


class BrokenExitHook:
    @contextlib.contextmanager
    def wrap_run(self, job, context) -> Iterator[None]:
        yield
        raise RuntimeError("wrap_run's exit is broken")

    async def aafter_finish(self, job, outcome):
        raise RuntimeError("aafter_finish is broken")


class NotAHook:
    """Defines no hook method (check leasequeue.E030)."""

    def before_save(self, job):  # pragma: no cover - never called
        pass


not_a_class = TenantHook()


class CountingHook:
    """Counts its instances: a hook is built once per process, not by its checks."""

    built = 0

    def __init__(self):
        type(self).built += 1

    def after_finish(self, job, outcome):
        pass


class NeedsArgumentsHook:
    """Cannot be built without arguments (check leasequeue.E030)."""

    def __init__(self, endpoint):
        self.endpoint = endpoint

    def after_finish(self, job, outcome):
        pass
