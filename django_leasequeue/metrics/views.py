"""``leasequeue:metrics``: the Prometheus endpoint, for staff or a bearer token.

Anonymous requests get 401 (with ``WWW-Authenticate: Bearer``), signed-in users who are not
staff 403. The token is the ``metrics_token`` option of a lease-queue backend, sent as
``Authorization: Bearer <token>``; compared in constant time.
"""

import hmac
import os

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from django_leasequeue.conf import job_database, lease_queue_backends
from django_leasequeue.exceptions import MetricsUnavailable
from django_leasequeue.metrics.client import multiprocess, require
from django_leasequeue.metrics.counters import MULTIPROC_DIR
from django_leasequeue.metrics.gauges import DatabaseCollector
from django_leasequeue.queue_summary import declared_queues


def _bearer_token(request: HttpRequest) -> str | None:
    scheme, _space, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _token_allowed(token: str) -> bool:
    tokens = [b.config.metrics_token for b in lease_queue_backends() if b.config.metrics_token]
    return any(hmac.compare_digest(token.encode(), known.encode()) for known in tokens)


def _forbidden(request: HttpRequest, token: str | None) -> HttpResponse | None:
    """The refusal for this request, or None when it may read the metrics."""
    if token is not None:
        return None if _token_allowed(token) else HttpResponse("Invalid token.\n", status=403)
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return None if user.is_active and user.is_staff else HttpResponse(status=403)
    response = HttpResponse("Staff login or a bearer token needed.\n", status=401)
    response["WWW-Authenticate"] = 'Bearer realm="leasequeue metrics"'
    return response


def exposition() -> bytes:
    """What a scrape returns: this process's counters, or every process's in multiprocess mode
    (``PROMETHEUS_MULTIPROC_DIR``), then the gauges read from the job table."""
    client = require()
    path = os.environ.get(MULTIPROC_DIR)
    if path:
        processes = client.CollectorRegistry()
        multiprocess.MultiProcessCollector(processes, path=path)
    else:
        processes = client.REGISTRY
    database = client.CollectorRegistry()
    database.register(DatabaseCollector(job_database(), declared_queues()))
    return client.generate_latest(processes) + client.generate_latest(database)


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    refusal = _forbidden(request, _bearer_token(request))
    if refusal is not None:
        return refusal
    try:
        client = require()
    except MetricsUnavailable as exc:
        return HttpResponse(f"{exc}\n", status=501, content_type="text/plain")
    return HttpResponse(exposition(), content_type=client.CONTENT_TYPE_LATEST)
