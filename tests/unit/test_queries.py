"""The query files (``sql/*.sql``): every statement named and described, no name twice; a job's
columns listed once (``sql/job_columns.py``) for every claim and every statement writing jobs, in
the functions of ``sql/functions/`` too."""

import re

import pytest

from django_leasequeue.sql import QUERIES, load_queries
from django_leasequeue.sql.functions import FUNCTIONS, TRIGGERS, _functions, function_sql
from django_leasequeue.sql.job_columns import (
    CLAIMED_JOB_COLUMNS,
    COPIED_JOB_COLUMNS,
    COPIED_STEP_COLUMNS,
    INSERTED_JOB_COLUMNS,
    PLAIN_JOB_COLUMNS,
    SCHEDULED_JOB_COLUMNS,
)


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


def _returned_columns(sql: str) -> list[str]:
    returning = sql.rsplit("RETURNING", 1)[1].split(";")[0]
    return [column.strip().removeprefix("job.") for column in returning.split(",")]


def _listed_columns(sql: str) -> list[str]:
    """The column list of the first ``INSERT INTO leasequeue_job (...)`` or ``COPY`` in ``sql``."""
    listed = sql.split("leasequeue_job (", 1)[1].split(")", 1)[0]
    return [column.strip() for column in listed.split(",")]


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
    workflow step claimed that way would lose its upstream results and never wake its children.
    The statements' lists are made of CLAIMED_JOB_COLUMNS; the functions' are written out in
    their migrations (and checked against the installed functions in test_claims)."""
    assert _returned_columns(_claim_sql(name)) == list(CLAIMED_JOB_COLUMNS)


def test_a_claimed_job_takes_exactly_the_columns_a_claim_returns():
    from dataclasses import fields

    from django_leasequeue.sql.records import ClaimedJob

    expected = {field.name for field in fields(ClaimedJob)} - {"lease", "problem"}
    assert expected | {"id", "lease_version"} == set(CLAIMED_JOB_COLUMNS)


_ROW_TYPE = re.compile(r"^RETURNS TABLE \((?P<columns>.*?)\)\nLANGUAGE", re.M | re.S)


@pytest.mark.parametrize("function", sorted(_CLAIM_FUNCTIONS.values()))
def test_the_claim_functions_row_type_names_the_columns_it_returns(function):
    sql = function_sql(function)
    declared = _ROW_TYPE.search(sql)["columns"]
    names = [column.split()[0] for column in declared.split(",")]
    assert names == _returned_columns(sql) == list(CLAIMED_JOB_COLUMNS)


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


@pytest.mark.parametrize(
    ("name", "columns"),
    [
        ("enqueue", INSERTED_JOB_COLUMNS),
        ("enqueue_one", INSERTED_JOB_COLUMNS),
        ("enqueue_plain", PLAIN_JOB_COLUMNS),
        ("copy_jobs", COPIED_JOB_COLUMNS),
        ("copy_steps", COPIED_STEP_COLUMNS),
        ("fire_schedule", SCHEDULED_JOB_COLUMNS),
    ],
)
def test_every_statement_writing_new_jobs_lists_its_columns_from_the_one_list(name, columns):
    assert _listed_columns(QUERIES[name].sql) == list(columns)


def test_a_column_list_token_is_expanded_wrapped_under_its_first_column():
    text = (
        "-- name: a\n-- claim\nUPDATE x AS job SET y = 1\nRETURNING {{job.claimed_job_columns}};\n"
    )
    sql = load_queries(text)["a"].sql
    assert "{{" not in sql
    assert _returned_columns(sql) == list(CLAIMED_JOB_COLUMNS)
    lines = sql.splitlines()[1:]
    assert len(lines) > 1 and all(len(line) <= 98 for line in lines)
    assert all(line.startswith(" " * len("RETURNING ") + "job.") for line in lines[1:])
    plain = load_queries("-- name: b\n-- copy\nCOPY leasequeue_job ({{copied_job_columns}});\n")
    assert _listed_columns(plain["b"].sql) == list(COPIED_JOB_COLUMNS)


@pytest.mark.parametrize("token", ["{{no_such_columns}}", "{{ claimed_job_columns }}", "{{x"])
def test_an_unknown_or_malformed_column_list_token_is_refused(token):
    with pytest.raises(ValueError, match="column list"):
        load_queries(f"-- name: a\n-- bad\nSELECT {token};\n", "bad.sql")


def test_the_job_copy_writes_its_row_in_the_order_of_copy_jobs_columns():
    from datetime import UTC, datetime

    from django_leasequeue.sql.executor import JobCopy
    from django_leasequeue.sql.records import NewJob
    from tests.support.tasks.basic import add

    written = []
    copy = JobCopy()
    copy.now = datetime(2026, 1, 1, tzinfo=UTC)
    copy._write_row = written.append
    job = NewJob(
        "0190f5c2-0000-7000-8000-000000000001", add, "tests.support.tasks.basic.add", [1, 2], {},
        "[1, 2]", "{}", 5, 30.0, 2.0, None, None, 60.0, None, {"a": 1}, '{"a": 1}',
    )  # fmt: skip
    copy.write(job)
    [row] = written
    assert dict(zip(COPIED_JOB_COLUMNS, row, strict=True)) == {
        "id": job.id,
        "task_path": "tests.support.tasks.basic.add",
        "queue_name": add.queue_name,
        "priority": add.priority,
        "backend": add.backend,
        "args": "[1, 2]",
        "kwargs": "{}",
        "run_after": copy.now,
        "enqueued_at": copy.now,
        "max_attempts": 5,
        "timeout_seconds": 30.0,
        "backoff_seconds": 2.0,
        "expires_at": job.expires_at(copy.now),
        "meta": '{"a": 1}',
    }


def test_a_workflow_writes_its_step_rows_in_the_order_of_copy_steps_columns():
    from datetime import UTC, datetime

    from django_leasequeue.choices import RunIf, Upstream
    from django_leasequeue.sql.records import LimitColumns, NewJob
    from django_leasequeue.workflows.builder import StepDefinition
    from django_leasequeue.workflows.enqueue import _step_row
    from tests.support.tasks.basic import add

    now = datetime(2026, 1, 1, tzinfo=UTC)
    limits = LimitColumns('[{"key": "task:x", "concurrency": 1}]', "task:x", "task:x", None)
    job = NewJob(
        "0190f5c2-0000-7000-8000-000000000002", add, "tests.support.tasks.basic.add", [1, 2], {},
        "[1, 2]", "{}", 5, 30.0, 2.0, None, limits, 60.0, None, {}, "{}",
    )  # fmt: skip
    definition = StepDefinition("second", add, (1, 2), {}, (0,), RunIf.SUCCEEDED, Upstream.CHAIN)
    row = _step_row(job, definition, "the-workflow", now, (0,), False)
    assert dict(zip(COPIED_STEP_COLUMNS, row, strict=True)) == {
        "id": job.id,
        "task_path": "tests.support.tasks.basic.add",
        "queue_name": add.queue_name,
        "priority": add.priority,
        "backend": add.backend,
        "args": "[1, 2]",
        "kwargs": "{}",
        "run_after": now,
        "enqueued_at": now,
        "max_attempts": 5,
        "timeout_seconds": 30.0,
        "backoff_seconds": 2.0,
        "limits": limits.limits,
        "flow_key": "task:x",
        "concurrency_key": "task:x",
        "pending_key": None,
        "status": "waiting",
        "workflow_id": "the-workflow",
        "step_name": "second",
        "run_if": RunIf.SUCCEEDED.value,
        "upstream": Upstream.CHAIN.value,
        "has_dependents": False,
        "meta": "{}",
        "expires_at": job.expires_at(now),
    }
