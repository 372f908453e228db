"""OpenTelemetry traces from the enqueue to each attempt, built on the job hooks
(``OPTIONS["opentelemetry"] = True`` puts ``OpenTelemetryHook`` first among a backend's hooks).

- At enqueue, a PRODUCER span ``leasequeue enqueue <task name>`` (a child of whatever span is
  current: the web request's), whose W3C trace context (``traceparent``, ``tracestate``) is
  stored in the job's ``meta``.
- In the worker, each attempt is a CONSUMER span ``leasequeue run <task name>``, a child of
  that stored context and linked to it, so one trace runs from the request to every attempt.
  Its status is ERROR, with the exception recorded, when the attempt raises (a ``Snooze`` is
  no error).

Attributes follow OpenTelemetry's messaging conventions: ``messaging.system`` ("leasequeue"),
``messaging.destination.name`` (the queue), ``messaging.message.id`` (the job id),
``messaging.operation.type`` ("send" / "process"), plus ``leasequeue.task`` (the task's path)
and, on a run, ``leasequeue.attempt``.

Only the OpenTelemetry API is used (the ``[otel]`` extra): the project sets up the SDK, its
exporters and its propagators' other formats. Without an SDK every span is a no-op.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Link, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from django_leasequeue.exceptions import Snooze

SYSTEM = "leasequeue"
# The W3C format, whatever global propagator the project set: the stored context must be
# readable by every worker, whatever its settings.
_PROPAGATOR = TraceContextTextMapPropagator()
# A proxy until the project sets its tracer provider (possibly after this import).
_TRACER = trace.get_tracer("django_leasequeue")


def _task_name(task_path: str) -> str:
    return task_path.rsplit(".", 1)[-1]


class OpenTelemetryHook:
    """The producer span at enqueue, the consumer span around each attempt."""

    def before_enqueue(self, job: Any) -> None:
        task = job.task
        with _TRACER.start_as_current_span(
            f"leasequeue enqueue {task.name}",
            kind=SpanKind.PRODUCER,
            attributes={
                "messaging.system": SYSTEM,
                "messaging.destination.name": task.queue_name,
                "messaging.message.id": str(job.id),
                "messaging.operation.type": "send",
                "messaging.operation.name": "send",
                "leasequeue.task": job.task_path,
            },
        ):
            _PROPAGATOR.inject(job.meta)

    def wrap_run(self, job: Any, context: Any) -> Any:
        return run_span(job)


@contextmanager
def run_span(job: Any) -> Iterator[trace.Span]:
    """The attempt's CONSUMER span, current while the task runs (its own spans are children)."""
    # An empty Context when the job carries none (enqueued before tracing was on): a new trace.
    producer_context = _PROPAGATOR.extract(job.meta)
    producer = trace.get_current_span(producer_context).get_span_context()
    with _TRACER.start_as_current_span(
        f"leasequeue run {_task_name(job.task_path)}",
        context=producer_context,
        kind=SpanKind.CONSUMER,
        links=[Link(producer)] if producer.is_valid else None,
        attributes={
            "messaging.system": SYSTEM,
            "messaging.destination.name": job.queue_name,
            "messaging.message.id": str(job.id),
            "messaging.operation.type": "process",
            "messaging.operation.name": "process",
            "leasequeue.task": job.task_path,
            "leasequeue.attempt": job.attempt,
        },
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except Snooze:
            raise
        except Exception as exc:
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
            raise
