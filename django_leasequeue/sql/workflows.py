"""Workflows (``workflows.sql``): the workflow row, a step's upstream results, the steps a finished
one released, an operator's cancel. The steps and dependency rows are written with
``executor.copy_rows`` (``copy_steps``, ``copy_dependencies``)."""

from collections.abc import Sequence
from uuid import UUID

from django_leasequeue.sql.readers import applied, first, first_or_none, rows
from django_leasequeue.sql.statement import Row, Statement, statement


def insert_workflow(workflow_id: str, name: str, backend: str, steps: int) -> Statement[Row]:
    """The workflow's row; returns ``{created_at}``."""
    return statement(
        "insert_workflow", first, id=workflow_id, workflow_name=name, backend=backend, steps=steps
    )


def upstream_results(job_id: UUID) -> Statement[list[Row]]:
    """``{step_name, result (JSON text), status}`` of a step's upstream steps, in order."""
    return statement("upstream_results", rows, id=job_id)


def released_steps(ids: Sequence[UUID]) -> Statement[list[Row]]:
    """``{id, queue_name}`` of the queued steps downstream of these finished ones."""
    return statement("released_steps", rows, ids=list(ids))


def lock_running_steps(workflow_id: UUID | str) -> Statement[list[Row]]:
    return statement("lock_running_steps", rows, id=workflow_id)


def request_workflow_cancel(workflow_id: UUID | str) -> Statement[bool]:
    return statement("request_workflow_cancel", applied, id=workflow_id)


def cancel_workflow_steps(workflow_id: UUID | str) -> Statement[list[Row]]:
    """``{id, status}`` of the steps cancelled (status cancelled) or asked to stop (running)."""
    return statement("cancel_workflow_steps", rows, id=workflow_id)


def workflow_state(workflow_id: UUID) -> Statement[Row | None]:
    """A workflow's counters and its running steps' progress (JSON text), or None."""
    return statement("workflow_state", first_or_none, id=workflow_id)
