"""Prometheus metrics (the optional ``metrics`` extra, ``prometheus-client``).

Each module imports without prometheus-client; what needs it raises ``MetricsUnavailable``
saying what to install (``client.require``). Its modules, one line each: docs/architecture.md,
*Packages and modules*.
"""
