"""The suite's own flush after a transactional test (tests/support/flush.py) leaves no row
behind, even one a write still in flight commits while the flush runs."""

import threading
import time
import uuid

import pytest
from django.core.management import call_command
from django.db import connections

from tests.support.helpers import session_of_its_own
from tests.support.models import Receipt

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_row_committed_while_the_flush_looks_for_rows_is_flushed():
    """The table is empty when the flush starts; another session's insert, not yet committed,
    commits while the flush waits for it. The row must not reach the next test."""
    call_command("flush", interactive=False, verbosity=0)  # a full one, as after a first test
    with session_of_its_own() as writer:
        writer.execute(
            f"INSERT INTO {Receipt._meta.db_table} (job_id, written_by) VALUES (%s, 'in flight')",
            [uuid.uuid4()],
        )
        flushed = threading.Event()

        def flush() -> None:
            try:
                call_command("flush", interactive=False, verbosity=0)
                flushed.set()
            finally:
                connections.close_all()

        flushing = threading.Thread(target=flush)
        flushing.start()
        time.sleep(0.5)
        assert not flushed.is_set(), "the flush did not wait for the write in flight"
        writer.commit()
        flushing.join(30)
    assert flushed.is_set()
    assert Receipt.objects.count() == 0
