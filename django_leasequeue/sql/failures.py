"""The builders of ``failures.sql``'s statements: the failures page's groups and one group's
jobs."""

from datetime import datetime
from uuid import UUID

from django_leasequeue.sql.readers import id_list, rows
from django_leasequeue.sql.statement import Row, Statement, statement


def failure_groups(*, window_seconds: float, limit: int) -> Statement[list[Row]]:
    """``{task_path, exception, count, first_seen, last_seen, groups_total, message, since,
    until}`` per group of the window's failed jobs, most jobs first; at most ``limit``."""
    return statement("failure_groups", rows, window_seconds=window_seconds, limit=limit)


def failure_group_ids(
    *, task_path: str, exception: str | None, since: datetime, until: datetime
) -> Statement[list[UUID]]:
    """The ids of the group's jobs that failed between ``since`` and ``until``, in id order."""
    return statement(
        "failure_group_ids",
        id_list,
        task_path=task_path,
        exception=exception,
        since=since,
        until=until,
    )
