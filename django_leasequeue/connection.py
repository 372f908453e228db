"""The worker's own psycopg connection, built from Django's ``DATABASES`` settings."""

from typing import Any

import psycopg
from django.db import connections
from psycopg.types.string import TextLoader


def connection_params(using: str) -> dict[str, Any]:
    """psycopg connect() keyword arguments for the Django database ``using``."""
    params = connections[using].get_connection_params()
    # Django's own cursor class and adapters are for its sync ORM, not for the worker.
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params.pop("prepare_threshold", None)
    params.setdefault("application_name", "django-leasequeue")
    return params


async def connect_async(
    using: str, *, prepared_statements: bool = False
) -> psycopg.AsyncConnection:
    """An autocommit AsyncConnection that returns jsonb as text, as Django's connection does.

    Prepared statements stay off by default so that PgBouncer in transaction mode works.
    """
    conn = await psycopg.AsyncConnection.connect(
        **connection_params(using),
        autocommit=True,
        prepare_threshold=0 if prepared_statements else None,
    )
    conn.adapters.register_loader("jsonb", TextLoader)
    conn.adapters.register_loader("json", TextLoader)
    return conn
