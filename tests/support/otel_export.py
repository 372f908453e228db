"""A hook that sets up the OpenTelemetry SDK in a worker process, exporting every span it ends
to the JSON-lines file named by ``LEASEQUEUE_TEST_SPANS`` (the OpenTelemetry test reads it).

Hooks are instantiated once per process, at the worker's start: a fitting place for a
process's tracing setup. The span processor is the simple one: a worker process ends with
``os._exit``, which would lose the spans a batch processor still holds."""

import json
import os
import threading
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


def _hex(number: int, digits: int) -> str:
    return f"{number:0{digits}x}"


class JsonLinesExporter(SpanExporter):
    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = []
        for span in spans:
            context = span.get_span_context()
            lines.append(
                {
                    "name": span.name,
                    "kind": span.kind.name,
                    "trace_id": _hex(context.trace_id, 32),
                    "span_id": _hex(context.span_id, 16),
                    "parent_id": _hex(span.parent.span_id, 16) if span.parent else None,
                    "attributes": dict(span.attributes or {}),
                    "status": span.status.status_code.name,
                    "status_description": span.status.description,
                    "events": [event.name for event in span.events],
                    "links": [
                        [_hex(link.context.trace_id, 32), _hex(link.context.span_id, 16)]
                        for link in span.links
                    ],
                }
            )
        with self.lock, open(self.path, "a") as out:
            out.writelines(json.dumps(line) + "\n" for line in lines)
        return SpanExportResult.SUCCESS


class ExportSpansToFile:
    def __init__(self) -> None:
        path = os.environ.get("LEASEQUEUE_TEST_SPANS")
        if path and not isinstance(trace.get_tracer_provider(), TracerProvider):
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(JsonLinesExporter(path)))
            trace.set_tracer_provider(provider)

    def before_enqueue(self, job) -> None:
        """Nothing: a hook needs a method (and this one costs a running job nothing)."""
