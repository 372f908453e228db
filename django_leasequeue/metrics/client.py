"""prometheus-client, when installed: the one place that imports it."""

from types import ModuleType

from django_leasequeue.exceptions import MetricsUnavailable

try:
    import prometheus_client
    import prometheus_client.metrics_core
    from prometheus_client import multiprocess
except ImportError:  # the metrics extra is not installed
    # None stands for "not installed"; every user checks for it.
    prometheus_client = None  # type: ignore[assignment]
    multiprocess = None  # type: ignore[assignment]


def available() -> bool:
    return prometheus_client is not None


def require() -> ModuleType:
    """The prometheus_client module, or a clear error naming the extra to install."""
    if prometheus_client is None:
        raise MetricsUnavailable(
            "Metrics need prometheus-client: pip install 'django-leasequeue[metrics]'."
        )
    return prometheus_client
