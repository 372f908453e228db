"""The query file (``sql/queries.sql``): every statement named and described, no name twice."""

import pytest

from django_leasequeue.sql import QUERIES, load_queries


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


# Claims that call a function: where the function's text is.
_CLAIM_FUNCTIONS = {
    "claim_by_ids": ("0020_cached_plans_by_key", "CLAIM_BY_IDS"),
    "claim_batch": ("0021_claim_batch_plan_cached", "CLAIM_BATCH"),
}


def _claim_sql(name: str) -> str:
    """The claim's SQL; for one that calls a function, the function's (its migration's text)."""
    from importlib import import_module

    if name in _CLAIM_FUNCTIONS:
        module, constant = _CLAIM_FUNCTIONS[name]
        return getattr(import_module(f"django_leasequeue.migrations.{module}"), constant)
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

    from django_leasequeue.sql.records import ClaimedJob

    expected = {field.name for field in fields(ClaimedJob)} - {"lease", "problem"}
    expected |= {"id", "lease_version"}
    assert _returned_columns(_claim_sql(name)) == expected


def test_the_claim_functions_row_type_names_the_columns_it_returns():
    from importlib import import_module

    migration = import_module("django_leasequeue.migrations.0020_cached_plans_by_key")
    declared = migration.ROW_TYPE.removeprefix("TABLE (").removesuffix(")")
    names = [column.split()[0] for column in declared.split(",")]
    returning = migration.CLAIM_BY_IDS.rsplit("RETURNING", 1)[1].split(";")[0]
    assert names == [column.strip().removeprefix("job.") for column in returning.split(",")]
