"""The pytest plugin of the package (its ``pytest11`` entry point): the ``leasequeue`` fixture.

Installed with the package, so a project's suite needs no ``conftest.py`` line. pytest loads it
before Django is set up: nothing of the package is imported until a test asks for the fixture.
"""

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from django_leasequeue.testing.fixture import LeaseQueueHelpers


@pytest.fixture
def leasequeue(request: pytest.FixtureRequest) -> "LeaseQueueHelpers":
    """The testing helpers of ``django_leasequeue.testing`` as methods:
    ``leasequeue.assert_enqueued(send_welcome, args=[user.pk])``, ``leasequeue.drain()``...

    Asks for pytest-django's ``db`` fixture itself (a transaction rolled back after the test);
    a test that asks for ``transactional_db`` or is marked ``django_db(transaction=True)``
    gets that instead, as pytest-django decides."""
    request.getfixturevalue("db")
    from django_leasequeue.testing.fixture import LeaseQueueHelpers

    return LeaseQueueHelpers()
