"""The generic readers of a statement's result rows (each row a dict by column name), shared by
the builder modules; a reader of one statement's own shape stays beside its builder."""

from typing import Any
from uuid import UUID

from django_leasequeue.sql.statement import Row


def rows(rows: list[Row]) -> list[Row]:
    return rows


def applied(rows: list[Row]) -> bool:
    return bool(rows)


def applied_ids(rows: list[Row]) -> set[Any]:  # job ids (UUID) or worker ids (str)
    return {row["id"] for row in rows}


def id_list(rows: list[Row]) -> list[UUID]:
    return [row["id"] for row in rows]


def by_id(rows: list[Row]) -> dict[str, Row]:
    return {str(row["id"]): row for row in rows}


def rows_by_id(rows: list[Row]) -> dict[UUID, Row]:
    return {row.pop("id"): row for row in rows}


def first(rows: list[Row]) -> Row:
    return rows[0]


def first_or_none(rows: list[Row]) -> Row | None:
    return rows[0] if rows else None


def first_id(rows: list[Row]) -> UUID | None:
    return rows[0]["id"] if rows else None


def first_value(rows: list[Row]) -> Any:
    return next(iter(rows[0].values()))


def column(rows: list[Row]) -> list[Any]:
    return [next(iter(row.values())) for row in rows]
