"""A task's call in the caller's transaction: a savepoint made only if the call sends a
statement, so that a statement of the task's that fails does not abort the test's transaction."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from django.db import connections


@contextmanager
def savepoint_on_first_statement(database: str) -> Iterator[None]:
    """Around a task's call: inside a transaction, a savepoint made just before the first
    statement the call sends on the connection of ``database``, released after the call, or
    rolled back when a statement failed in it (the transaction is then aborted, and only that
    rollback lets the test and the drain go on). Rolled back only then: as in a worker, where a
    task's statements commit one by one, the writes of a task that raises stay. A call that
    sends no statement costs no round trip; outside a transaction there is nothing to do."""
    connection = connections[database]
    if not connection.in_atomic_block:
        yield
        return
    made: list[str] = []
    making = False

    def make_first(execute: Callable[..., Any], *args: Any) -> Any:
        nonlocal making
        if not made and not making:  # the savepoint's own statement comes through here too
            making = True
            try:
                made.append(connection.savepoint())  # type: ignore[arg-type]  # in a transaction
            finally:
                making = False
        return execute(*args)

    try:
        with connection.execute_wrapper(make_first):
            yield
    except BaseException:
        if made and (connection.needs_rollback or _aborted(connection)):
            connection.needs_rollback = False  # else Django refuses the rollback's own statement
            connection.savepoint_rollback(made[0])
        elif made:
            connection.savepoint_commit(made[0])
        raise
    if made:
        connection.savepoint_commit(made[0])


def _aborted(connection: Any) -> bool:
    """Whether the connection's transaction is aborted (a statement failed in it)."""
    raw = connection.connection
    return raw is not None and raw.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
