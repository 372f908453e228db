"""The worker's statements at a clock given, for the testing drain (``django_leasequeue.testing``).

Inside a transaction PostgreSQL's ``now()`` is the transaction's start. A drain runs inside the
test's transaction (``django.test.TestCase``), which may have started long before: run as they
are, the worker's statements would count a retry's backoff or a snooze from that moment, and
find a job deferred to a minute ago not due yet. So the drain runs each of them at a clock of
its own (``drain_clock``, the database's wall clock, read as each round of the drain starts):
``at_clock`` gives the statement whose text has every ``now()`` replaced by that clock, a
parameter, and the due test (``run_after <= now()``) by a second one, ``due_by`` (the clock, or
the last moment a row holds: the drain's ``with_scheduled``).

Why statements of their own rather than a clock parameter in the worker's (``coalesce(%(now)s,
now())``) or a setting read by a function: the worker's statements, their texts and their plans
stay exactly as they are, and so does what each claim costs. The derived texts are made once per
process, from the same ``.sql`` text, when first used.

A statement that calls one of the app's functions cannot be derived: the function reads the
transaction's ``now()`` itself. The claim by ids has a twin written out for the drain
(``claim_by_ids_at_clock`` in ``clock.sql``); the others (``claim_batch``, ``complete_many``,
``complete_steps``, ``enqueue_plain_cached``) are refused, and the drain does without them: it
polls with ``claim_batch_with_expiring`` and completes one job at a time with ``complete``, a
workflow step's status change then booked by the step trigger.
"""

import functools
import re
from datetime import UTC, datetime

from django_leasequeue.sql import QUERIES, Query
from django_leasequeue.sql.readers import first_value
from django_leasequeue.sql.statement import Statement, statement

# The due test of the claims' texts (never ``run_after <= now() - ...``, the sweep's staleness).
_DUE_TEST = re.compile(r"\b((?:\w+\.)?run_after) <= now\(\)(?!\s*[-+])")
_NOW = re.compile(r"\bnow\(\)")
# A call of one of the app's functions (``leasequeue_claim_batch(...)``); a table name is
# followed by a space or a parenthesis after one.
_FUNCTION_CALL = re.compile(r"\bleasequeue_\w+\(")
_CLOCK = "%(now)s::timestamptz"
_DUE_BY = "%(due_by)s::timestamptz"
# Statements that call a function reading now(), and their twins written at a clock.
_TWINS = {"claim_by_ids": "claim_by_ids_at_clock"}

# ``due_by`` for "whatever its run_after": the last moment a job row holds.
ANY_TIME = datetime.max.replace(tzinfo=UTC)


def drain_clock() -> Statement[datetime]:
    """The database's wall clock now (``clock_timestamp()``), whatever transaction is open."""
    return statement("drain_clock", first_value)


@functools.cache
def clocked_query(query: Query) -> Query:
    """``query`` with its ``now()`` made the parameter ``now`` and its due test ``due_by``;
    raises ValueError for a statement that calls a function and has no twin."""
    twin = _TWINS.get(query.name)
    if twin is not None:
        return QUERIES[twin]
    if _FUNCTION_CALL.search(query.sql):
        raise ValueError(
            f"Statement {query.name!r} calls a function, which reads the transaction's now() "
            "itself: it cannot run at another clock."
        )
    text = _NOW.sub(_CLOCK, _DUE_TEST.sub(rf"\1 <= {_DUE_BY}", query.sql))
    return Query(f"{query.name}@clock", query.description, text)


def at_clock[T](
    worker_statement: Statement[T], now: datetime, due_by: datetime | None = None
) -> Statement[T]:
    """The statement run with ``now`` for its clock; a job is due when its ``run_after`` is at
    or before ``due_by`` (default: ``now``)."""
    params = {**worker_statement.params, "now": now, "due_by": now if due_by is None else due_by}
    return Statement(clocked_query(worker_statement.query), params, worker_statement.read)
