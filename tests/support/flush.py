"""The flush after each transactional test keeps the content types and permissions that
``migrate`` made, instead of truncating them and making them again.

Django's ``TransactionTestCase`` (pytest-django's ``transactional_db``) flushes every table after
each test, and the ``post_migrate`` signal that follows makes every content type and permission
again: in the Django 5.2 series that signal was 28% of a test process's CPU (py-spy, 2026-12-05).
Here the flush leaves ``django_content_type`` and ``auth_permission`` as they are while they
hold what the last full flush left (a checksum, one query), skips the signal, and truncates only
the tables that hold rows (one query finds them; ``CASCADE`` takes the empty tables that refer
to them): a test touches a few of the 26 tables, and each one truncated means new files for the
table and each of its indexes. That query first locks the tables against writes, so it waits, as
Django's ``TRUNCATE`` does, for a write still in flight: the last statement of a process a test
killed runs on in its server session after the process is gone, and a row it inserts into a
table read as empty would outlive the flush into the next test.
When a test changed the kept tables, the flush is Django's own: every table, then the signal.
"""

from collections.abc import Iterator

import pytest
from django.core.management.commands import flush
from django.db import connections, transaction

KEPT_TABLES = ("django_content_type", "auth_permission")

_CHECKSUM = """
    SELECT md5(concat(
        (SELECT string_agg(concat_ws('|', id, app_label, model), ',' ORDER BY id)
         FROM django_content_type),
        '#',
        (SELECT string_agg(concat_ws('|', id, content_type_id, codename, name), ',' ORDER BY id)
         FROM auth_permission)))"""

# What the kept tables held after the last full flush of each database (by alias).
_after_full_flush: dict[str, str] = {}
_django_handle = flush.Command.handle


def _checksum(database: str) -> str:
    with connections[database].cursor() as cursor:
        cursor.execute(_CHECKSUM)
        return cursor.fetchone()[0]


def _sql_flush_keeping_tables(style, connection, reset_sequences=True, allow_cascade=False):
    """Django's ``sql_flush`` of the tables that hold rows, but the kept ones."""
    tables = [
        table
        for table in connection.introspection.django_table_names(
            only_existing=True, include_views=False
        )
        if table not in KEPT_TABLES
    ]
    quoted = [connection.ops.quote_name(table) for table in tables]
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        cursor.execute(f"LOCK TABLE {', '.join(quoted)} IN SHARE MODE")
        cursor.execute(
            " UNION ALL ".join(f"SELECT %s WHERE EXISTS (SELECT FROM {table})" for table in quoted),
            tables,
        )
        holding_rows = [table for (table,) in cursor.fetchall()]
    return connection.ops.sql_flush(
        style, holding_rows, reset_sequences=reset_sequences, allow_cascade=True
    )


def _handle(self, **options):
    database = options["database"]
    if options.get("inhibit_post_migrate"):
        return _django_handle(self, **options)
    if _after_full_flush.get(database) == _checksum(database):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(flush, "sql_flush", _sql_flush_keeping_tables)
            return _django_handle(self, **{**options, "inhibit_post_migrate": True})
    result = _django_handle(self, **options)
    _after_full_flush[database] = _checksum(database)
    return result


@pytest.fixture(scope="session", autouse=True)
def _flush_keeps_content_types_and_permissions() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(flush.Command, "handle", _handle)
        yield
