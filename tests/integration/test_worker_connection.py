"""One worker connection, many coroutines: a statement never runs inside another coroutine's
transaction, so a failed transaction takes nothing else with it (issue #20: a completion that
ran inside a flow claim's transaction was rolled back with it, or aborted it)."""

import asyncio
from datetime import UTC, datetime

import psycopg
import pytest

from django_leasequeue.models import Worker
from django_leasequeue.runtime.database import Database
from django_leasequeue.sql import workers as workers_sql
from django_leasequeue.sql.statement import Statement

pytestmark = pytest.mark.django_db(transaction=True)


def _beat(worker_id: str) -> Statement:
    return workers_sql.worker_beat(
        worker_id=worker_id,
        host="test",
        pid=1,
        queues=None,
        concurrency=1,
        lease_seconds=30,
        started_at=datetime.now(UTC),
        jobs_running=0,
        jobs_done=0,
    )


async def test_a_statement_sent_during_a_failing_transaction_is_not_part_of_it():
    db = Database(
        "default",
        prepared_statements=False,
        name="test",
        lease_seconds=30,
    )
    in_transaction = asyncio.Event()

    async def fails_after_a_while(conn: psycopg.AsyncConnection) -> None:
        await conn.execute("SELECT 1")
        in_transaction.set()
        await asyncio.sleep(0.3)  # the other coroutine sends its statement meanwhile
        await conn.execute("SELECT 1 / 0")

    try:
        transaction = asyncio.create_task(db.transaction(fails_after_a_while, "failing"))
        await in_transaction.wait()
        await db.run(_beat("outside"))  # waits for the transaction, then runs on its own
        with pytest.raises(psycopg.errors.DivisionByZero):
            await transaction
        await db.run(_beat("after"))  # the connection is not left in an aborted transaction
    finally:
        await db.close()
    ids = await asyncio.to_thread(lambda: set(Worker.objects.values_list("id", flat=True)))
    assert ids == {"outside", "after"}
