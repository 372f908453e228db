"""The worker's own psycopg connection, built from Django's ``DATABASES`` settings."""

from typing import Any

import psycopg
from django.db import connections
from psycopg.types.string import TextLoader


def connection_params(database: str) -> dict[str, Any]:
    """psycopg connect() keyword arguments for the Django database alias ``database``."""
    params = connections[database].get_connection_params()
    # Django's own cursor class and adapters are for its sync ORM, not for the worker.
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params.pop("prepare_threshold", None)
    params.setdefault("application_name", "django-leasequeue")
    return params


def dead_peer_params(lease_seconds: float, options: str = "") -> dict[str, Any]:
    """libpq settings that notice a dead or unreachable server within a fraction of the lease.

    TCP keepalives and ``tcp_user_timeout`` break a connection whose peer vanished (a crashed
    host, a dropped route), ``connect_timeout`` bounds a connect that gets no answer, and a
    server-side ``statement_timeout`` ends a statement that waits too long (on a lock, say).
    None of them helps when something in between keeps the socket alive but forwards nothing;
    that is what the worker's own lease deadline is for (``runtime.worker``).
    """
    lease_ms = int(lease_seconds * 1000)
    return {
        "connect_timeout": max(2, int(lease_seconds / 3)),
        "keepalives": 1,
        "keepalives_idle": max(1, int(lease_seconds / 6)),
        "keepalives_interval": max(1, int(lease_seconds / 12)),
        "keepalives_count": 3,
        "tcp_user_timeout": lease_ms // 2,
        "options": f"{options} -c statement_timeout={lease_ms // 2}".strip(),
    }


async def connect_async(
    database: str, *, prepared_statements: bool = False, lease_seconds: float | None = None
) -> psycopg.AsyncConnection:
    """An autocommit AsyncConnection that returns jsonb as text, as Django's connection does.

    Prepared statements stay off by default so that PgBouncer in transaction mode works. With
    ``lease_seconds``, the connection notices a dead server within a fraction of it.
    """
    params = connection_params(database)
    if lease_seconds is not None:
        params.update(dead_peer_params(lease_seconds, params.get("options", "")))
    conn = await psycopg.AsyncConnection.connect(
        **params,
        autocommit=True,
        prepare_threshold=0 if prepared_statements else None,
    )
    conn.adapters.register_loader("jsonb", TextLoader)
    conn.adapters.register_loader("json", TextLoader)
    return conn
