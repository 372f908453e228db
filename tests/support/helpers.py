"""Small helpers shared by the integration tests."""

import asyncio
import contextlib
import dataclasses
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import psycopg
from django.db import connections

from django_leasequeue import replyless
from django_leasequeue.models import Job
from django_leasequeue.runtime.job_handle import JobHandle
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.executor import execute
from django_leasequeue.sql.records import ClaimedJob, Lease, SweptJob
from django_leasequeue.sql.statement import Statement
from django_leasequeue.wakeups import Wakeups

SHORT_LEASE = 0.2


def claim_one(job_id, worker_id: str, lease_seconds: float = 30.0) -> ClaimedJob:
    claimed = execute(
        jobs_sql.claim_by_ids([job_id], worker_id=worker_id, lease_seconds=lease_seconds)
    )
    assert len(claimed) == 1, f"{worker_id} could not claim {job_id}"
    return claimed[0]


def try_claim(ids, worker_id: str = "w") -> list[ClaimedJob]:
    """The signal-path claim; empty when the jobs are not claimable."""
    return execute(jobs_sql.claim_by_ids(ids, worker_id=worker_id, lease_seconds=30))


def try_claim_batch(queues=None, limit: int = 10, worker_id: str = "w") -> list:
    """The poll-path claim over ``queues`` (None = all)."""
    return execute(jobs_sql.claim_batch(queues, limit, worker_id=worker_id, lease_seconds=30))


def claim_and_let_expire(job_id, worker_id: str) -> ClaimedJob:
    claimed = claim_one(job_id, worker_id, lease_seconds=SHORT_LEASE)
    time.sleep(SHORT_LEASE + 0.05)
    return claimed


def recover() -> list[SweptJob]:
    return execute(jobs_sql.recover_expired(limit=1000, backoff_cap_seconds=600))


def wait_until_due(job_id, timeout: float = 5.0) -> None:
    """Wait until a retrying job's backoff has passed (by the database's clock)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT run_after <= now() FROM leasequeue_job WHERE id = %s", [job_id])
            if cursor.fetchone()[0]:
                return
        time.sleep(0.01)
    raise AssertionError(f"job {job_id} never became due")


def snapshot(job_id) -> dict:
    return Job.objects.filter(pk=job_id).values().get()


def run_in_threads(count: int, target: Callable[[int], object]) -> list[object]:
    """Run ``target(i)`` in ``count`` threads started together; each closes its DB connection."""
    barrier = threading.Barrier(count)
    results: list[object] = [None] * count
    errors: list[BaseException] = []

    def runner(i: int) -> None:
        try:
            barrier.wait()
            results[i] = target(i)
        except BaseException as exc:  # re-raised in the test's thread below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=runner, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


def in_a_thread[T](query: Callable[[], T]) -> T:
    """Run ``query`` on a thread of its own, which closes its database connection.

    Under Playwright's sync API the test body runs in another context than the fixtures, so a
    query made there would open a connection that nothing closes.
    """
    return run_in_threads(1, lambda _i: query())[0]


def claim_limited(free: int = 10, worker_id: str = "w", lease_seconds: float = 30.0) -> list:
    """One round of the worker's flow claim, on a connection of its own."""
    from django_leasequeue.runtime.database import Database
    from django_leasequeue.runtime.flow_claims import FlowClaimer

    async def claim() -> list:
        db = Database("default", prepared_statements=False, name=worker_id, lease_seconds=30)
        try:
            claimer = FlowClaimer(db, None, worker_id=worker_id, lease_seconds=lease_seconds)
            return await claimer.claim(free)
        finally:
            await db.close()

    return asyncio.run(claim())


def claimed_job(**changes) -> ClaimedJob:
    """A claimed job no database knows, as a claim returns it, with ``changes``."""
    now = datetime.now(UTC)
    job = ClaimedJob(
        lease=Lease(uuid.uuid4(), 1),
        task_path="tests.support.tasks.basic.add",
        queue_name="default",
        priority=0,
        backend="default",
        args=[],
        kwargs={},
        attempt=1,
        max_attempts=3,
        timeout_seconds=None,
        backoff_seconds=1.0,
        checkpoint=None,
        enqueued_at=now,
        started_at=now,
        last_attempted_at=now,
        worker_ids=["w"],
        errors=[],
        run_after=now,
    )
    return dataclasses.replace(job, **changes)


def running_handle(deadline: float) -> JobHandle:
    """A handle of a job no database knows, as the worker holds it (for its services)."""
    handle = JobHandle(claimed_job(), db=None, progress_interval=1.0, publish=None)
    handle.fence_deadline = deadline
    return handle


def validate_status_json(data: dict) -> None:
    """Raise jsonschema's ValidationError unless ``data`` follows docs/status.schema.json (the
    documented schema of ``leasequeue status --json``), formats (date-time) included."""
    import json
    from pathlib import Path

    import jsonschema

    schema = json.loads((Path(__file__).parents[2] / "docs" / "status.schema.json").read_text())
    validator = jsonschema.Draft202012Validator
    validator(schema, format_checker=validator.FORMAT_CHECKER).validate(data)


def session_of_its_own(wrapper=None, **options) -> psycopg.Connection:
    """A psycopg connection of its own (not Django's) to the database of ``wrapper``, a Django
    connection (default: the test's), with its settings."""
    params = (wrapper or connections["default"]).get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    return psycopg.connect(**params, **options)


def wakeups_delivered(wakeups: Wakeups, timeout: float = 10.0) -> None:
    """Return once Redis has run every wakeup push this process sent without a reply.

    Enqueue pushes on a connection of its own without waiting (``replyless.py``), and Redis may
    serve a command from another connection first (it reads a long push in pieces). A marker
    sent on that same connection comes back only after the pushes before it.
    """
    client = wakeups.client()
    marker = f"{wakeups.key_prefix}:delivered:{uuid.uuid4()}"
    replyless.sender.send(client, [("RPUSH", marker, "here")])
    assert client.blpop([marker], timeout=timeout) is not None, "the wakeup pushes never arrived"


def plan_nodes(node: dict):
    """Every node of an EXPLAIN (FORMAT JSON) plan."""
    yield node
    for child in node.get("Plans", []):
        yield from plan_nodes(child)


def rows_read(statement: Statement) -> int:
    """Rows the statement's scans of the job table produced or filtered out (EXPLAIN ANALYZE,
    rolled back)."""
    with connections["default"].cursor() as cursor:
        cursor.execute("BEGIN")
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {statement.query.sql}", statement.params)
        [[[plan]]] = cursor.fetchall()
        cursor.execute("ROLLBACK")
    scans = [n for n in plan_nodes(plan["Plan"]) if n.get("Relation Name") == "leasequeue_job"]
    return _rows_of(scans)


def pages_read(statement: Statement) -> int:
    """Buffer pages the statement read, those of the statements inside a function it calls
    included (EXPLAIN ANALYZE, rolled back)."""
    with connections["default"].cursor() as cursor:
        cursor.execute("BEGIN")
        cursor.execute(
            f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {statement.query.sql}", statement.params
        )
        [[[plan]]] = cursor.fetchall()
        cursor.execute("ROLLBACK")
    return plan["Plan"].get("Shared Hit Blocks", 0) + plan["Plan"].get("Shared Read Blocks", 0)


@contextlib.contextmanager
def held_snapshot():
    """An idle REPEATABLE READ transaction that has read (its snapshot taken), open for the
    block: vacuum and scans alike must keep every row version it may see."""
    with session_of_its_own() as holder:
        holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT count(*) FROM leasequeue_job")
        yield
        holder.rollback()


def _rows_of(scans: list[dict]) -> int:
    """Rows the scan nodes produced or filtered out."""
    return sum(
        n["Actual Rows"] * n["Actual Loops"] + n.get("Rows Removed by Filter", 0) for n in scans
    )


def rows_read_inside(statement: Statement, *, of_statement: str = "") -> int:
    """``rows_read`` of a statement whose work is done by a PL/pgSQL function: the scans of the
    job table by the statements inside it (those whose text holds ``of_statement``), as
    auto_explain reports their plans (rolled back)."""
    return _rows_of(_scans_inside(statement, of_statement))


def pages_read_inside(statement: Statement, *, index: str) -> int:
    """Buffer pages read by the scans of ``index`` inside a PL/pgSQL function (the index's
    pages and the rows behind its entries), as auto_explain reports them (rolled back)."""
    scans = _scans_inside(statement, "", buffers=True)
    return sum(
        n.get("Shared Hit Blocks", 0) + n.get("Shared Read Blocks", 0)
        for n in scans
        if n.get("Index Name") == index
    )


def _scans_inside(statement: Statement, of_statement: str, buffers: bool = False) -> list[dict]:
    connection = connections["default"]
    connection.ensure_connection()
    plans: list[str] = []

    def keep(diagnostic) -> None:
        plans.append(diagnostic.message_primary.split("plan:", 1)[-1])

    connection.connection.add_notice_handler(keep)
    try:
        with connection.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute("LOAD 'auto_explain'")
            for setting, value in {
                "log_min_duration": "0",
                "log_analyze": "on",
                "log_buffers": "on" if buffers else "off",
                "log_nested_statements": "on",
                "log_format": "json",
                "log_level": "notice",
            }.items():
                cursor.execute(f"SET LOCAL auto_explain.{setting} = '{value}'")
            cursor.execute(statement.query.sql, statement.params)
            cursor.execute("ROLLBACK")
    finally:
        connection.connection.remove_notice_handler(keep)
    explained = [json.loads(plan) for plan in plans if plan.strip().startswith("{")]
    scans = [
        node
        for plan in explained
        if of_statement in plan["Query Text"]
        for node in plan_nodes(plan["Plan"])
        if node.get("Relation Name") == "leasequeue_job"
    ]
    assert scans, "auto_explain reported no scan of the job table"
    return scans


def statistics_of_finished_jobs(backend, jobs: int = 10_000) -> None:
    """The job table's planner statistics as after a day of work (every job finished, so
    claimable ones look rare), then the table emptied: what a backlog arriving later is planned
    on until the next ANALYZE."""
    from tests.support.tasks.basic import add

    backend.enqueue_many([(add, (0, n), {}) for n in range(jobs)])
    Job.objects.update(status="succeeded")
    with connections["default"].cursor() as cursor:
        cursor.execute("ANALYZE leasequeue_job")
        cursor.execute("TRUNCATE leasequeue_job CASCADE")


def statistics_of_a_nearly_empty_table(backend) -> list[str]:
    """The job table emptied and analysed, then three jobs enqueued (their ids returned): what
    a fresh install's first worker plans on."""
    from tests.support.tasks.basic import add

    with connections["default"].cursor() as cursor:
        cursor.execute("TRUNCATE leasequeue_job CASCADE")
        cursor.execute("ANALYZE leasequeue_job")
    return [result.id for result in backend.enqueue_many([(add, (0, n), {}) for n in range(3)])]


@contextlib.asynccontextmanager
async def recover_sweep(backend, *, wakeups_usable: bool = False) -> AsyncIterator:
    """A worker's recover sweep on a connection of its own, closed after."""
    from django_leasequeue.runtime.database import Database
    from django_leasequeue.runtime.recover import RecoverSweep

    db = Database("default", prepared_statements=False, name="test", lease_seconds=30)
    redis_calls = ThreadPoolExecutor(1)
    try:
        yield RecoverSweep(
            db, backend.config, backend.wakeups, redis_calls, wakeups_usable=lambda: wakeups_usable
        )
    finally:
        await db.close()
        redis_calls.shutdown()
