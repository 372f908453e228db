"""Prometheus metrics (the optional ``metrics`` extra, ``prometheus-client``).

``counters``: what workers and enqueue count as jobs move (no-ops without prometheus-client);
``gauges``: the collector that reads the job and worker tables at scrape time; ``views``: the
``leasequeue:metrics`` endpoint. Each module imports without prometheus-client; what needs it
raises ``MetricsUnavailable`` saying what to install (``client.require``).
"""
