"""The pytest plugin of the package (its ``pytest11`` entry point): the ``leasequeue`` fixture.

Installed with the package, so a project's suite needs no ``conftest.py`` line. pytest loads it
before Django is set up: nothing of the package is imported until a test asks for the fixture.
"""

import asyncio
import inspect
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from django_leasequeue.testing.fixture import LeaseQueueHelpers


# pytest-django's ``django_db`` mark, its arguments by name.
_DJANGO_DB_ARGUMENTS = (
    "transaction",
    "reset_sequences",
    "databases",
    "serialized_rollback",
    "available_apps",
)


def _is_async(function: object) -> bool:
    return inspect.iscoroutinefunction(function)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every ``async def`` test that asks for ``leasequeue`` ``django_db(transaction=True)``
    (keeping the other arguments of a ``django_db`` mark it has).

    pytest-django chooses between a rolled-back transaction and a flush from the marks and the
    test's own fixture names, before any fixture runs: a ``transactional_db`` that a fixture
    asks for on the way is too late, and the test would get ``db``'s transaction while its ORM
    calls commit in another thread, so their rows would outlive it into the next tests."""
    for item in items:
        if "leasequeue" not in getattr(item, "fixturenames", ()):
            continue
        if not _is_async(getattr(item, "obj", None)):
            continue
        marker = item.get_closest_marker("django_db")
        arguments: dict[str, object] = {}
        if marker:
            arguments = {
                **dict(zip(_DJANGO_DB_ARGUMENTS, marker.args, strict=False)),
                **marker.kwargs,
            }
        item.add_marker(pytest.mark.django_db(**{**arguments, "transaction": True}), append=False)


@pytest.fixture
def leasequeue(request: pytest.FixtureRequest) -> Iterator["LeaseQueueHelpers"]:
    """The testing helpers of ``django_leasequeue.testing`` as methods:
    ``leasequeue.assert_enqueued(send_welcome, args=[user.pk])``, ``leasequeue.drain()``...

    Asks for pytest-django's ``db`` fixture itself (a transaction rolled back after the test);
    a test that asks for ``transactional_db`` or is marked ``django_db(transaction=True)``
    gets that instead, as pytest-django decides. An ``async def`` test gets
    ``transactional_db`` (``pytest_collection_modifyitems`` marks it): its ORM calls run in
    another thread than the one holding ``db``'s transaction, so they commit, and only a flush
    after the test takes their rows away; the connection that thread opened is closed after the
    test, so the test database can be dropped at the end of the run."""
    is_async = _is_async(getattr(request, "function", None))
    request.getfixturevalue("transactional_db" if is_async else "db")
    from django_leasequeue.testing.fixture import LeaseQueueHelpers

    yield LeaseQueueHelpers()
    if is_async:
        from asgiref.sync import sync_to_async
        from django.db import connections

        # A loop of its own, never set as the thread's current one (pytest-asyncio's stay).
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(sync_to_async(connections.close_all)())
        finally:
            loop.close()
