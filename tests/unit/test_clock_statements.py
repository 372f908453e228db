"""The worker's statements at a clock given (``sql/clock.py``), which the testing drain runs:
derived from the worker's own text, every ``now()`` made a parameter; the claim by ids, a
function in the worker, written out beside it (``sql/clock.sql``) and held to it here."""

import re
from datetime import UTC, datetime

import pytest

from django_leasequeue.sql import QUERIES
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.clock import ANY_TIME, at_clock, clocked_query
from django_leasequeue.sql.functions import function_sql
from django_leasequeue.sql.records import Lease
from django_leasequeue.sql.statement import statement

# What the drain runs at its clock (django_leasequeue/testing): claims, the flow claim, every
# write of an attempt's end, the expiry sweep.
DRAIN_STATEMENTS = [
    "claim_batch_with_expiring",
    "flow_candidates",
    "flow_usage",
    "store_rate_buckets",
    "complete",
    "fail",
    "hand_back",
    "progress",
    "checkpoint",
    "snooze",
    "expire_jobs",
    "expire_doomed",
]
NOW = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.mark.parametrize("name", DRAIN_STATEMENTS)
def test_each_statement_the_drain_runs_is_derived_with_no_now_left(name):
    query = QUERIES[name]
    derived = clocked_query(query)
    assert derived.name == f"{name}@clock"
    assert "now()" not in derived.sql
    uses = query.sql.count("now()")
    assert derived.sql.count("%(now)s::timestamptz") + derived.sql.count("%(due_by)s") == uses
    # The rest of the text is the worker's, word for word.
    back = derived.sql.replace("%(now)s::timestamptz", "now()")
    assert back.replace("%(due_by)s::timestamptz", "now()") == query.sql


@pytest.mark.parametrize("name", ["claim_batch_with_expiring", "flow_candidates"])
def test_the_due_tests_of_the_claims_take_due_by(name):
    derived = clocked_query(QUERIES[name]).sql
    assert "run_after <= %(due_by)s::timestamptz" in derived
    assert "run_after <= %(now)s" not in derived


def test_a_staleness_test_is_not_a_due_test():
    derived = clocked_query(QUERIES["stale_due_jobs"]).sql
    assert "run_after <= %(now)s::timestamptz - make_interval" in derived
    assert "%(due_by)s" not in derived


@pytest.mark.parametrize(
    "name", ["complete_many", "complete_steps", "claim_batch", "enqueue_plain_cached"]
)
def test_a_statement_that_calls_a_function_is_refused(name):
    with pytest.raises(ValueError, match="calls a function"):
        clocked_query(QUERIES[name])


def test_at_clock_keeps_the_builders_parameters_and_reader_and_adds_the_clock():
    worker = jobs_sql.complete(Lease(job_id="a", lease_version=3), {"ok": True})
    drain = at_clock(worker, NOW)
    assert drain.params == {**worker.params, "now": NOW, "due_by": NOW}
    assert drain.read is worker.read
    scheduled = at_clock(statement("claim_batch_with_expiring", list), NOW, ANY_TIME)
    assert scheduled.params["due_by"] == ANY_TIME


def _normalized(sql: str) -> str:
    return re.sub(r"\s+", " ", sql).strip()


def test_the_claim_by_ids_twin_is_the_functions_update_at_the_clock():
    """claim_by_ids is a function reading the transaction's now(): its twin, claim_by_ids_at_clock,
    is its UPDATE written out. Any change to one must go to the other."""
    function = function_sql("leasequeue_claim_by_ids").split("AS $$", 1)[1]  # its body
    update = function[function.index("UPDATE leasequeue_job AS job") : function.index("RETURNING")]
    for parameter, replacement in {
        "claimer": "%(worker_id)s::text",
        "lease_seconds": "%(lease_seconds)s::float8",
        "ids": "%(ids)s::uuid[]",
        "flow_claim": "%(flow_claim)s::boolean",
    }.items():
        update = re.sub(rf"(?<![.\w]){parameter}\b", replacement, update)
    update = update.replace("job.run_after <= now()", "job.run_after <= %(due_by)s::timestamptz")
    update = update.replace("now()", "%(now)s::timestamptz")
    twin = clocked_query(QUERIES["claim_by_ids"])
    assert twin is QUERIES["claim_by_ids_at_clock"]
    assert _normalized(twin.sql[: twin.sql.index("RETURNING")]) == _normalized(update)
    returned = [c.strip().removeprefix("job.") for c in twin.sql.split("RETURNING")[1].split(",")]
    functions = function.split("RETURNING")[1].split(";")[0]
    assert returned == [c.strip().removeprefix("job.") for c in functions.split(",")]
