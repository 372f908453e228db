"""``Statement``: one named query of the ``.sql`` files with its parameters and the reader of its
result rows, as the builder modules (``jobs.py``, ``reads.py``, ...) make them and
``executor.py`` runs them."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django_leasequeue.sql import QUERIES, Query

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Statement[T]:
    """One named query with its parameters and the reader of its result rows."""

    query: Query
    params: dict[str, Any]
    read: Callable[[list[Row]], T]


def statement[T](name: str, read: Callable[[list[Row]], T], **params: Any) -> Statement[T]:
    """The query ``name`` of ``QUERIES`` with these parameters, its rows read by ``read``."""
    return Statement(QUERIES[name], params, read)
