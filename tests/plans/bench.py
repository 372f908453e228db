"""``PlanBench``: a session on the copies of ``table.py`` that runs statements as the worker
runs them and hands back the plans they ran."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from django_leasequeue.sql.statement import Statement
from tests.plans.explain import Plan, PlanLog
from tests.plans.table import SCHEMA, Sample


class PlanBench:
    """A psycopg connection to the test database, as the worker's (autocommit, parameters
    bound by the server, nothing prepared), its ``search_path`` on the copies."""

    def __init__(
        self,
        params: dict[str, Any],
        sample: Sample | None = None,
        *,
        schema: str = SCHEMA,
        prepared: bool = False,
    ) -> None:
        # ``prepared``: as a worker with the option prepared_statements (psycopg prepares
        # each statement at its first execution).
        self.conn = psycopg.connect(
            **params, autocommit=True, prepare_threshold=0 if prepared else None
        )
        self.conn.execute(f"SET search_path = {schema}, public")
        self.log = PlanLog(self.conn)
        self._sample = sample

    @property
    def sample(self) -> Sample:
        assert self._sample is not None, "this session was opened without the table's sample"
        return self._sample

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def rolled_back(self) -> Iterator[None]:
        """A transaction whose writes are undone: every test leaves the table as built."""
        with self.conn.transaction(force_rollback=True):
            yield

    def run(self, statement: Statement[Any]) -> tuple[list[tuple[Any, ...]], list[Plan]]:
        """Run ``statement`` with its parameters; its result rows, and the plans that ran (the
        statement's own last, after those of the functions it called)."""
        return self.sql(statement.query.sql, statement.params)

    def sql(self, text: str, params: Any = None) -> tuple[list[tuple[Any, ...]], list[Plan]]:
        """Run SQL written in a test (a call the worker makes through no named statement)."""
        self.log.take()
        cursor = self.conn.execute(text, params)
        result = cursor.fetchall() if cursor.description else []
        # A query's portal stays open, its plan not yet logged, until the next statement's
        # opens (or the transaction ends): a utility statement, which has no plan to log.
        self.conn.execute("SHOW search_path")
        return result, self.log.take()
