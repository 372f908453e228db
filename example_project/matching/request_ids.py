"""The request id, from the view that enqueues a job to that job's log lines.

``RequestIdMiddleware`` makes each request's id current (the ``X-Request-ID`` header a proxy
set, or a new one) and sends it back. ``RequestIdHook`` (``OPTIONS["hooks"]``) stores it in the
job's meta at enqueue and makes it current again while the job runs, in the worker, so the
job's own log lines name the request that asked for it.
"""

import contextlib
import contextvars
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from django.http import HttpRequest, HttpResponse

_current: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)


def current() -> str | None:
    return _current.get()


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = request.headers.get("X-Request-ID") or uuid.uuid4().hex
        token = _current.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            _current.reset(token)
        response["X-Request-ID"] = request_id
        return response


class RequestIdHook:
    def before_enqueue(self, job: Any) -> None:
        request_id = _current.get()
        if request_id is not None:
            job.meta["request_id"] = request_id

    @contextlib.contextmanager
    def wrap_run(self, job: Any, context: Any) -> Iterator[None]:
        token = _current.set(job.meta.get("request_id"))
        try:
            yield
        finally:
            _current.reset(token)
