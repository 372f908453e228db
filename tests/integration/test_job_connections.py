"""Django's connection rules at a sync job's boundaries (runtime/job_connections.py), on real
PostgreSQL connections opened in a thread of their own, as a worker's job thread opens them:
each case is run through ``close_old_job_connections`` and through Django's own
``close_old_connections``, which must leave the connection alike."""

import threading
import time
from collections.abc import Callable

import pytest
from django.db import close_old_connections, connection, connections

from django_leasequeue.runtime.job_connections import close_old_job_connections
from tests.support.helpers import session_of_its_own

pytestmark = pytest.mark.django_db(transaction=True)


def in_new_thread(call: Callable[[], object]) -> object:
    """``call()`` in a thread of its own (its own Django connections, closed after)."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:  # handed to the test
            outcome.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    assert outcome, "the thread did not finish"
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def fresh(conn) -> None:
    """Persistent and healthy: nothing to close."""
    conn.close_at = None


def past_max_age(conn) -> None:
    conn.close_at = time.monotonic() - 1


def autocommit_left_off(conn) -> None:
    conn.set_autocommit(False)


def error_on_a_usable_connection(conn) -> None:
    conn.close_at = None
    conn.errors_occurred = True


def error_on_a_dead_connection(conn) -> None:
    conn.close_at = None
    pid = conn.connection.info.backend_pid
    with session_of_its_own(conn, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    conn.errors_occurred = True


CASES = {
    "fresh": (fresh, True),
    "past_max_age": (past_max_age, False),
    "autocommit_left_off": (autocommit_left_off, False),
    "error_on_a_usable_connection": (error_on_a_usable_connection, True),
    "error_on_a_dead_connection": (error_on_a_dead_connection, False),
}


def boundary_after(close: Callable[[], None], spoil: Callable[[object], None]) -> tuple:
    """A job's first boundary, a connection opened by the job, ``spoil``-ed, the job's end:
    whether the connection is still open (the same one), and its ``errors_occurred``."""
    close()  # the job starts
    connection.ensure_connection()
    opened = connection.connection
    spoil(connection)
    close()  # the job ends
    return connection.connection is opened, connection.errors_occurred


@pytest.mark.parametrize("case", CASES)
def test_a_job_boundary_closes_what_django_closes_at_a_request_boundary(case):
    spoil, stays_open = CASES[case]
    ours = in_new_thread(lambda: boundary_after(close_old_job_connections, spoil))
    django = in_new_thread(lambda: boundary_after(close_old_connections, spoil))
    assert ours == django
    assert ours[0] is stays_open


def test_a_connection_opened_between_jobs_is_checked_at_the_next_start():
    """Opened outside a job (a hook run in the job thread, say): the next job's start closes it
    when it has gone past its age, as Django's request start would."""

    def run() -> bool:
        close_old_job_connections()
        close_old_job_connections()  # a job that opened nothing ended
        connection.ensure_connection()  # between jobs
        past_max_age(connection)
        close_old_job_connections()  # the next job starts
        return connection.connection is None

    assert in_new_thread(run) is True


def test_a_closed_connection_is_checked_again_once_reopened():
    def run() -> tuple[bool, bool]:
        close_old_job_connections()
        connection.ensure_connection()
        past_max_age(connection)
        close_old_job_connections()
        closed = connection.connection is None
        connection.ensure_connection()  # the next job opens it again
        past_max_age(connection)
        close_old_job_connections()
        return closed, connection.connection is None

    assert in_new_thread(run) == (True, True)


def test_a_connection_open_before_the_first_boundary_is_found_by_it():
    """The first call in a thread is Django's own scan, so a connection opened before it (before
    the thread noted anything) is checked too, then and afterwards."""

    def run() -> tuple[bool, bool]:
        connection.ensure_connection()
        connection.close_at = None
        close_old_job_connections()
        kept = connection.connection is not None
        past_max_age(connection)
        close_old_job_connections()
        return kept, connection.connection is None

    assert in_new_thread(run) == (True, True)
