"""OpenTelemetry from a "request" in the test process to each attempt in a real worker: one
trace, the run spans children of the enqueue's PRODUCER span and linked to it, the messaging
attributes, ERROR for the failed attempt; a workflow's steps in the enqueuing trace.

The test process exports to the SDK's in-memory exporter; the workers export to a file
through a hook (tests/support/otel_export.py)."""

import json

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from django_leasequeue import chain, step
from django_leasequeue.models import Job
from tests.acceptance.harness import wait_until
from tests.support.tasks.hooks import fails_once
from tests.support.tasks.workflows import fetch, length

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

_EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="module")
def tracer():
    """The test process's tracer provider (a process has one: set once)."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    return provider.get_tracer("tests")


@pytest.fixture
def traced(settings, tracer, start_workers, tmp_path):
    """OpenTelemetry on in this process and in workers exporting to ``spans``."""
    default = settings.TASKS["default"]
    settings.TASKS = {
        "default": {**default, "OPTIONS": {**default["OPTIONS"], "opentelemetry": True}}
    }
    _EXPORTER.clear()
    spans = tmp_path / "spans.jsonl"

    def start():
        return start_workers(
            options={
                "opentelemetry": True,
                "hooks": ["tests.support.otel_export.ExportSpansToFile"],
            },
            env={"LEASEQUEUE_TEST_SPANS": str(spans)},
        )

    return tracer, start, spans


def _worker_spans(path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def _hex(number, digits):
    return f"{number:0{digits}x}"


def test_one_trace_from_the_request_to_every_attempt(traced):
    tracer, start, spans_file = traced
    with tracer.start_as_current_span("GET /orders/42", kind=SpanKind.SERVER) as request:
        job_id = fails_once.enqueue().id
    workers = start()
    wait_until(lambda: Job.objects.get(pk=job_id).status == "succeeded", 30, "the retry ran")
    wait_until(lambda: len(_worker_spans(spans_file)) >= 2, 10, "both run spans exported")
    runs = [s for s in _worker_spans(spans_file) if s["name"] == "leasequeue run fails_once"]
    assert workers.stop() == 0

    [producer] = [s for s in _EXPORTER.get_finished_spans() if s.kind == SpanKind.PRODUCER]
    assert producer.name == "leasequeue enqueue fails_once"
    assert producer.parent.span_id == request.get_span_context().span_id
    assert dict(producer.attributes) == {
        "messaging.system": "leasequeue",
        "messaging.destination.name": "default",
        "messaging.message.id": job_id,
        "messaging.operation.type": "send",
        "messaging.operation.name": "send",
        "leasequeue.task": "tests.support.tasks.hooks.fails_once",
    }
    trace_id = _hex(request.get_span_context().trace_id, 32)
    producer_id = _hex(producer.get_span_context().span_id, 16)
    meta = Job.objects.get(pk=job_id).meta
    assert meta["traceparent"].startswith(f"00-{trace_id}-{producer_id}-")  # then the flags

    assert [run["attributes"]["leasequeue.attempt"] for run in runs] == [1, 2]
    for run in runs:
        assert run["kind"] == "CONSUMER"
        assert run["trace_id"] == trace_id  # one trace from the request
        assert run["parent_id"] == producer_id  # each attempt a child of the enqueue
        assert run["links"] == [[trace_id, producer_id]]  # and linked to it
        assert run["attributes"] == {
            "messaging.system": "leasequeue",
            "messaging.destination.name": "default",
            "messaging.message.id": job_id,
            "messaging.operation.type": "process",
            "messaging.operation.name": "process",
            "leasequeue.task": "tests.support.tasks.hooks.fails_once",
            "leasequeue.attempt": run["attributes"]["leasequeue.attempt"],
        }
    first, second = runs
    assert first["span_id"] != second["span_id"]
    assert first["status"] == StatusCode.ERROR.name
    assert first["status_description"] == "ValueError: first attempt fails"
    assert first["events"] == ["exception"]
    assert second["status"] == StatusCode.UNSET.name and second["events"] == []


def test_workflow_steps_run_in_the_trace_that_enqueued_them(traced):
    tracer, start, spans_file = traced
    with tracer.start_as_current_span("POST /imports") as request:
        handle = chain(step(fetch, "https://a"), step(length)).enqueue()
    workers = start()
    wait_until(lambda: handle.refresh() or handle.status == "succeeded", 30, "the workflow")  # type: ignore[func-returns-value]
    names = {"leasequeue run fetch", "leasequeue run length"}
    wait_until(
        lambda: names <= {s["name"] for s in _worker_spans(spans_file)}, 10, "both steps' spans"
    )
    assert workers.stop() == 0
    producers = {s.name: s for s in _EXPORTER.get_finished_spans() if s.kind == SpanKind.PRODUCER}
    assert set(producers) == {"leasequeue enqueue fetch", "leasequeue enqueue length"}
    assert {p.parent.span_id for p in producers.values()} == {request.get_span_context().span_id}
    trace_id = _hex(request.get_span_context().trace_id, 32)
    for run in (s for s in _worker_spans(spans_file) if s["name"] in names):
        producer = producers[run["name"].replace(" run ", " enqueue ")]
        assert run["trace_id"] == trace_id
        assert run["parent_id"] == _hex(producer.get_span_context().span_id, 16)
