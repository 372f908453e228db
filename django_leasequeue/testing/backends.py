"""Which lease-queue backend the testing helpers use when no task names one."""

from django.core.exceptions import ImproperlyConfigured

from django_leasequeue.backend import LeaseQueueBackend
from django_leasequeue.conf import lease_queue_backend, lease_queue_backends
from django_leasequeue.tasks_framework import DEFAULT_TASK_BACKEND_ALIAS, InvalidTaskBackend


def testing_backend() -> LeaseQueueBackend:
    """``TASKS["default"]`` when it is a lease-queue backend, else the first one ``TASKS``
    declares; its options (the job database, leases, backoff, hooks) are a drain's."""
    try:
        return lease_queue_backend(DEFAULT_TASK_BACKEND_ALIAS)
    except InvalidTaskBackend:
        backends = lease_queue_backends()
    if not backends:
        raise ImproperlyConfigured(
            "The leasequeue testing helpers need a LeaseQueueBackend in TASKS; there is none."
        )
    return backends[0]


def backend_of(alias: str, fallback: LeaseQueueBackend) -> LeaseQueueBackend:
    """The lease-queue backend a job was enqueued through (its row's ``backend``), or
    ``fallback`` when that alias is gone or not ours."""
    try:
        return lease_queue_backend(alias)
    except InvalidTaskBackend:
        return fallback
