"""The query files (``sql/*.sql``): every statement named and described, no name twice; the
claims' columns, in the functions of ``sql/functions/`` too."""

import re

import pytest

from django_leasequeue.sql import QUERIES, load_queries
from django_leasequeue.sql.functions import FUNCTIONS, TRIGGERS, _functions, function_sql


def test_every_query_has_a_name_and_a_description():
    assert {
        "enqueue",
        "claim_by_ids",
        "claim_batch",
        "heartbeat",
        "complete",
        "fail",
        "hand_back",
        "cancel",
        "recover_expired",
        "progress",
        "checkpoint",
        "lock_lease",
    } <= set(QUERIES)
    for query in QUERIES.values():
        assert query.description and not query.description.startswith("name:")
        assert query.sql and "-- name:" not in query.sql


def test_a_query_defined_twice_is_refused():
    text = "-- name: a\n-- first\nSELECT 1;\n-- name: a\n-- again\nSELECT 2;\n"
    with pytest.raises(ValueError, match="defined twice"):
        load_queries(text)


def _returned_columns(sql: str) -> set[str]:
    returning = sql.rsplit("RETURNING", 1)[1].split(";")[0]
    return {column.strip().removeprefix("job.") for column in returning.split(",")}


# Claims that call a function: its text is in sql/functions/.
_CLAIM_FUNCTIONS = {
    "claim_by_ids": "leasequeue_claim_by_ids",
    "claim_batch": "leasequeue_claim_batch",
}


def _claim_sql(name: str) -> str:
    """The claim's SQL; for one that calls a function, the function's."""
    if name in _CLAIM_FUNCTIONS:
        return function_sql(_CLAIM_FUNCTIONS[name])
    return QUERIES[name].sql


@pytest.mark.parametrize(
    "name",
    [
        "claim_by_ids",
        "claim_batch",
        "claim_batch_of_queues",
        "claim_batch_with_expiring",
        "claim_batch_by_queue",
    ],
)
def test_every_claim_returns_every_column_a_claimed_job_holds(name):
    """A claim path that leaves a column out hands its jobs over with the field's default: a
    workflow step claimed that way would lose its upstream results and never wake its children."""
    from dataclasses import fields

    from django_leasequeue.protocol import ClaimedJob

    expected = {field.name for field in fields(ClaimedJob)} - {"lease", "problem"}
    expected |= {"id", "lease_version"}
    assert _returned_columns(_claim_sql(name)) == expected


_ROW_TYPE = re.compile(r"^RETURNS TABLE \((?P<columns>.*?)\)\nLANGUAGE", re.M | re.S)


@pytest.mark.parametrize("function", sorted(_CLAIM_FUNCTIONS.values()))
def test_the_claim_functions_row_type_names_the_columns_it_returns(function):
    sql = function_sql(function)
    declared = _ROW_TYPE.search(sql)["columns"]
    names = [column.split()[0] for column in declared.split(",")]
    returning = sql.rsplit("RETURNING", 1)[1].split(";")[0]
    assert names == [column.strip().removeprefix("job.") for column in returning.split(",")]


def test_the_function_files_are_read_as_functions_not_as_named_queries():
    """sql/functions/*.sql are read by ``function_sql``, one function a file; ``QUERIES`` reads
    only the files of sql/ itself."""
    assert {"leasequeue_claim_by_ids", "leasequeue_complete_steps"} <= set(FUNCTIONS)
    assert "CREATE OR REPLACE TRIGGER leasequeue_step_status_changed" in TRIGGERS
    for query in QUERIES.values():
        assert not re.search(r"CREATE (OR REPLACE )?(FUNCTION|TRIGGER)", query.sql), query.name
    with pytest.raises(KeyError, match="No function 'leasequeue_nothing'"):
        function_sql("leasequeue_nothing")
    with pytest.raises(ValueError, match="named after it"):
        _functions({"claim.sql": "CREATE OR REPLACE FUNCTION claim() ..."})
