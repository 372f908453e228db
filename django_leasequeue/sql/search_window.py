"""The builders of ``search_window.sql``'s statements: where the job list's search by argument
stops."""

from uuid import UUID

from django_leasequeue.sql.readers import first_id
from django_leasequeue.sql.statement import Statement, statement


def nth_newest_id(floor: UUID, rows: int) -> Statement[UUID | None]:
    """The ``rows``-th newest job id at or above ``floor``; None when fewer jobs are."""
    return statement("nth_newest_id", first_id, floor=floor, rows=rows)
