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


@pytest.fixture
def leasequeue(request: pytest.FixtureRequest) -> Iterator["LeaseQueueHelpers"]:
    """The testing helpers of ``django_leasequeue.testing`` as methods:
    ``leasequeue.assert_enqueued(send_welcome, args=[user.pk])``, ``leasequeue.drain()``...

    Asks for pytest-django's ``db`` fixture itself (a transaction rolled back after the test);
    a test that asks for ``transactional_db`` or is marked ``django_db(transaction=True)``
    gets that instead, as pytest-django decides. An ``async def`` test gets
    ``transactional_db``: its ORM calls run in another thread than the one holding ``db``'s
    transaction, so they commit, and only a flush after the test takes their rows away; the
    connection that thread opened is closed after the test, so the test database can be
    dropped at the end of the run."""
    is_async = inspect.iscoroutinefunction(getattr(request, "function", None))
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
