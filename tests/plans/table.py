"""A copy of the app's job tables holding what a busy deployment's job table holds, analysed.

The copies live in a schema of their own (``SCHEMA``) in the test database: the same columns,
the same indexes under the same names (each made from the migrated table's own definition),
the step trigger; the app's functions, which name the tables without a schema, reach the
copies through the session's ``search_path``. Other tests' tables are left alone, and the
copies' statistics change only when these tests ``ANALYZE`` them (autovacuum is off for them).

The mix, about 132,000 jobs: a history of 92,500 finished jobs (most succeeded), a backlog of
20,000 due jobs over three queues and three priorities, 2,000 scheduled for later, 1,000
retrying, 2,100 running under leases of 20 workers (100 of them expired), 1,500 waiting with an
expiry (500 past it), 3,000 held to concurrency limits over 30 flow partitions (60 of theirs
running), a chord of 10,000 steps (8,000 done, 1,000 running, 1,000 queued) with its callback
waiting on them, and a chain of 500 steps waiting.
"""

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import psycopg

from django_leasequeue.sql.records import Lease

SCHEMA = "leasequeue_plans"
TABLES = ("leasequeue_job", "leasequeue_workflow", "leasequeue_dependency")
WORKERS = 20
PARTITIONS = 30
CHORD = UUID("0195f2a0-0000-7000-8000-000000000001")
CALLBACK = UUID("0195f2a0-0000-7000-8000-000000000002")
CHAIN = UUID("0195f2a0-0000-7000-8000-000000000003")


def _copy_tables(conn: psycopg.Connection, schema: str) -> None:
    conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    conn.execute(f"CREATE SCHEMA {schema}")
    for table in TABLES:
        conn.execute(
            f"CREATE TABLE {schema}.{table} (LIKE public.{table} INCLUDING ALL EXCLUDING INDEXES)"
            " WITH (autovacuum_enabled = false)"
        )
        definitions = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = %s",
            (table,),
        ).fetchall()
        for (definition,) in definitions:
            conn.execute(definition.replace(f" ON public.{table} ", f" ON {schema}.{table} "))
    (trigger,) = conn.execute(
        "SELECT pg_get_triggerdef(oid) FROM pg_trigger"
        " WHERE tgrelid = 'public.leasequeue_job'::regclass AND NOT tgisinternal"
    ).fetchone()
    conn.execute(trigger.replace(" ON public.leasequeue_job ", f" ON {schema}.leasequeue_job "))
    # A time-ordered id (as ids.py makes them: milliseconds first), for rows made at ``at``.
    conn.execute(
        f"""CREATE FUNCTION {schema}.job_id(at timestamptz) RETURNS uuid LANGUAGE sql AS $$
        SELECT (substr(h, 1, 8) || '-' || substr(h, 9, 4)
                || substr(gen_random_uuid()::text, 14))::uuid
        FROM (SELECT lpad(to_hex((extract(epoch FROM at) * 1000)::bigint), 12, '0') AS h) AS ms
        $$"""
    )


# Each group of jobs: how many, and the expressions of its columns over ``n`` (1..count).
_COLUMNS = (
    "id, task_path, queue_name, priority, args, kwargs, status, run_after, enqueued_at, "
    "started_at, last_attempted_at, finished_at, attempt, worker_id, worker_ids, lease_version, "
    "lease_expires_at, heartbeat_at, result, errors, expires_at, flow_key, limits, "
    "concurrency_key, workflow_id, step_name, has_dependents, run_if, upstream"
)
_QUEUE = "CASE WHEN n % 20 = 0 THEN 'reports' WHEN n % 20 < 4 THEN 'emails' ELSE 'default' END"
_PRIORITY = "CASE n % 20 WHEN 5 THEN 10 WHEN 6 THEN -10 ELSE 0 END"
_TASK = "'app.tasks.' || (ARRAY['send', 'build', 'sync', 'resize'])[n % 4 + 1]"
_WORKER = f"'host-' || (n % {WORKERS})"
_ERROR = """jsonb_build_array(jsonb_build_object('exception_class_path', 'app.Error',
            'message', 'boom', 'traceback', '', 'attempt', 1))"""
_LIMITS = f"""jsonb_build_array(jsonb_build_object('key', 'tenant-' || n % {PARTITIONS},
                                                'concurrency', 2))"""
_GROUPS: dict[str, tuple[int, str]] = {
    "succeeded": (
        90_000,
        f"""job_id(ts), {_TASK}, {_QUEUE}, {_PRIORITY}, '[]', '{{}}', 'succeeded', ts, ts,
        ts + '1 s', ts + '1 s', ts + '2 s', 1, {_WORKER}, jsonb_build_array({_WORKER}), 1,
        NULL, ts + '1 s', '1', '[]', NULL, NULL, NULL, NULL, NULL, NULL, false, NULL, NULL
        FROM (SELECT n, now() - interval '3 days' + n * interval '2.5 s' AS ts
              FROM generate_series(1, {{count}}) AS n) AS s""",
    ),
    "failed": (
        2_000,
        f"""job_id(ts), {_TASK}, {_QUEUE}, 0, '[]', '{{}}',
        CASE WHEN n % 4 = 0 THEN 'cancelled' ELSE 'failed' END, ts, ts, ts + '1 s', ts + '1 s',
        ts + '2 s', 3, {_WORKER}, jsonb_build_array({_WORKER}), 3, NULL, ts + '1 s', NULL,
        {_ERROR}, NULL, NULL, NULL, NULL, NULL, NULL, false, NULL, NULL
        FROM (SELECT n, now() - interval '2 days' + n * interval '60 s' AS ts
              FROM generate_series(1, {{count}}) AS n) AS s""",
    ),
    "backlog": (
        20_000,
        f"""job_id(ts), {_TASK}, {_QUEUE}, {_PRIORITY}, '[]', '{{}}', 'queued', ts, ts,
        NULL, NULL, NULL, 0, NULL, '[]', 0, NULL, NULL, NULL, '[]', NULL, NULL, NULL, NULL,
        NULL, NULL, false, NULL, NULL
        FROM (SELECT n, now() - interval '10 minutes' + n * interval '25 ms' AS ts
              FROM generate_series(1, {{count}}) AS n) AS s""",
    ),
    "scheduled": (
        2_000,
        f"""job_id(now() - interval '1 hour'), {_TASK}, {_QUEUE}, 0, '[]', '{{}}', 'queued',
        now() + n * interval '40 s', now() - interval '1 hour', NULL, NULL, NULL, 0, NULL,
        '[]', 0, NULL, NULL, NULL, '[]', NULL, NULL, NULL, NULL, NULL, NULL, false, NULL, NULL
        FROM generate_series(1, {{count}}) AS n""",
    ),
    "retrying": (
        1_000,
        f"""job_id(now() - interval '5 minutes'), {_TASK}, {_QUEUE}, 0, '[]', '{{}}',
        'retrying', now() - interval '1 minute' + (n % 2) * interval '10 minutes',
        now() - interval '5 minutes', now() - interval '2 minutes',
        now() - interval '2 minutes', NULL, 1, NULL, jsonb_build_array({_WORKER}), 1, NULL,
        now() - interval '2 minutes', NULL, {_ERROR}, NULL, NULL, NULL, NULL, NULL, NULL,
        false, NULL, NULL
        FROM generate_series(1, {{count}}) AS n""",
    ),
    "running": (
        2_000,
        f"""job_id(now() - interval '1 minute'), {_TASK}, {_QUEUE}, 0, '[]', '{{}}', 'running',
        now() - interval '1 minute', now() - interval '1 minute', now() - interval '5 s',
        now() - interval '5 s', NULL, 1, {_WORKER}, jsonb_build_array({_WORKER}), 1 + n % 3,
        now() + interval '1 hour', now(), NULL, '[]', NULL, NULL, NULL, NULL, NULL, NULL, false,
        NULL, NULL
        FROM generate_series(1, {{count}}) AS n""",
    ),
    "lease_expired": (
        100,
        f"""job_id(now() - interval '3 minutes'), {_TASK}, {_QUEUE}, 0, '[]', '{{}}', 'running',
        now() - interval '3 minutes', now() - interval '3 minutes', now() - interval '2 minutes',
        now() - interval '2 minutes', NULL, 1, {_WORKER}, jsonb_build_array({_WORKER}), 1,
        now() - interval '1 minute', now() - interval '90 s', NULL, '[]', NULL, NULL, NULL,
        NULL, NULL, NULL, false, NULL, NULL
        FROM generate_series(1, {{count}}) AS n""",
    ),
    "expiring": (
        1_500,
        f"""job_id(now() - interval '20 minutes'), {_TASK}, {_QUEUE}, {_PRIORITY}, '[]', '{{}}',
        'queued',
        now() - interval '20 minutes' + n * interval '10 ms', now() - interval '20 minutes',
        NULL, NULL, NULL, 0, NULL, '[]', 0, NULL, NULL, NULL, '[]',
        CASE WHEN n <= 500 THEN now() - interval '10 minutes' ELSE now() + interval '1 hour' END,
        NULL, NULL, NULL, NULL, NULL, false, NULL, NULL
        FROM generate_series(1, {{count}}) AS n""",
    ),
    "limited": (
        3_000,
        f"""job_id(now() - interval '5 minutes'), {_TASK}, {_QUEUE}, 0, '[]', '{{}}', 'queued',
        now() - n * interval '100 ms', now() - interval '5 minutes', NULL, NULL, NULL, 0, NULL,
        '[]', 0, NULL, NULL, NULL, '[]', NULL, 'tenant-' || n % {PARTITIONS}, {_LIMITS},
        'tenant-' || n % {PARTITIONS}, NULL, NULL, false, NULL, NULL
        FROM generate_series(1, {{count}}) AS n""",
    ),
    "limited_running": (
        2 * PARTITIONS,
        f"""job_id(now() - interval '5 minutes'), {_TASK}, {_QUEUE}, 0, '[]', '{{}}', 'running',
        now() - interval '5 minutes', now() - interval '5 minutes', now() - interval '5 s',
        now() - interval '5 s', NULL, 1, {_WORKER}, jsonb_build_array({_WORKER}), 1,
        now() + interval '1 hour', now(), NULL, '[]', NULL, 'tenant-' || n % {PARTITIONS},
        {_LIMITS}, 'tenant-' || n % {PARTITIONS}, NULL, NULL, false, NULL, NULL
        FROM generate_series(1, {{count}}) AS n""",
    ),
    "chord": (
        10_000,
        f"""job_id(now() - interval '10 minutes'), 'app.tasks.member', {_QUEUE}, 0, '[]', '{{}}',
        CASE WHEN n <= 8000 THEN 'succeeded' WHEN n <= 9000 THEN 'running' ELSE 'queued' END,
        now() - interval '10 minutes', now() - interval '10 minutes',
        CASE WHEN n <= 9000 THEN now() - interval '1 minute' END,
        CASE WHEN n <= 9000 THEN now() - interval '1 minute' END,
        CASE WHEN n <= 8000 THEN now() - interval '30 s' END,
        CASE WHEN n <= 9000 THEN 1 ELSE 0 END,
        CASE WHEN n <= 9000 THEN {_WORKER} END, '[]', CASE WHEN n <= 9000 THEN 1 ELSE 0 END,
        CASE WHEN n > 8000 AND n <= 9000 THEN now() + interval '1 hour' END,
        CASE WHEN n <= 9000 THEN now() END, CASE WHEN n <= 8000 THEN '1'::jsonb END, '[]',
        NULL, NULL, NULL, NULL, '{CHORD}', 'member-' || n, true, 'succeeded', NULL
        FROM generate_series(1, {{count}}) AS n""",
    ),
    "chain": (
        500,
        f"""job_id(now() - interval '10 minutes'), 'app.tasks.link', {_QUEUE}, 0, '[]', '{{}}',
        'waiting', now() - interval '10 minutes', now() - interval '10 minutes', NULL, NULL,
        NULL, 0, NULL, '[]', 0, NULL, NULL, NULL, '[]', NULL, NULL, NULL, NULL, '{CHAIN}',
        'link-' || n, true, 'succeeded', 'chain'
        FROM generate_series(1, {{count}}) AS n""",
    ),
}
_CALLBACK = f"""
INSERT INTO leasequeue_job (id, task_path, args, kwargs, status, workflow_id, step_name,
                            run_if, upstream)
VALUES ('{CALLBACK}', 'app.tasks.callback', '[]', '{{}}', 'waiting', '{CHORD}', 'callback',
        'succeeded', 'chord');
INSERT INTO leasequeue_workflow (id, name, steps_total, steps_unfinished)
VALUES ('{CHORD}', 'chord', 10001, 2001), ('{CHAIN}', 'chain', 501, 501);
INSERT INTO leasequeue_dependency (position, parent_id, child_id, outcome)
SELECT row_number() OVER (ORDER BY id), id, '{CALLBACK}',
       CASE WHEN status = 'succeeded' THEN 'succeeded' END
FROM leasequeue_job WHERE workflow_id = '{CHORD}' AND id <> '{CALLBACK}';
"""


@dataclass(frozen=True)
class Sample:
    """Rows of the built table that the statements under test act on."""

    worker_id: str
    running: list[Lease]  # one worker's running jobs, as its heartbeat presents them
    running_steps: list[Lease]  # running members of the chord
    due: list[UUID]  # due plain jobs of the queue "emails", in claim order
    limited: list[UUID]  # due jobs held to limits
    flow_keys: list[str]
    # The fairness probe's last find: when the oldest due plain job became due.
    oldest_due_run_after: datetime


def build(conn: psycopg.Connection, schema: str = SCHEMA) -> Sample:
    """Make the copies in ``schema`` (the connection's ``search_path`` is set to it first), fill
    and analyse them; returns rows to act on. Runs in one transaction."""
    with conn.transaction():
        make_copies(conn, schema)
        fill(conn, {group: count for group, (count, _) in _GROUPS.items()})
        conn.execute(_CALLBACK)
    analyse(conn, schema)
    return sample(conn)


def make_copies(conn: psycopg.Connection, schema: str) -> None:
    """Empty copies of the tables in ``schema``, which the connection's ``search_path`` then
    puts first."""
    _copy_tables(conn, schema)
    conn.execute(f"SET search_path = {schema}, public")


def fill(conn: psycopg.Connection, counts: dict[str, int]) -> None:
    """Add jobs of these groups, this many each."""
    for group, count in counts.items():
        rows = _GROUPS[group][1].replace("{count}", str(count))
        conn.execute(f"INSERT INTO leasequeue_job ({_COLUMNS}) SELECT {rows}")


def analyse(conn: psycopg.Connection, schema: str) -> None:
    for table in TABLES:
        conn.execute(f"ANALYZE {schema}.{table}")


def sample(conn: psycopg.Connection) -> Sample:
    worker_id = "host-7"

    def leases(where: str) -> list[Lease]:
        found = conn.execute(
            f"SELECT id, lease_version FROM leasequeue_job WHERE {where} ORDER BY id LIMIT 10"
        ).fetchall()
        return [Lease(job_id, version) for job_id, version in found]

    def ids(where: str) -> list[UUID]:
        return [row[0] for row in conn.execute(f"SELECT id FROM leasequeue_job WHERE {where}")]

    return Sample(
        worker_id=worker_id,
        running=leases(
            f"status = 'running' AND worker_id = '{worker_id}' AND workflow_id IS NULL"
            " AND lease_expires_at > now()"
        ),
        running_steps=leases(f"status = 'running' AND workflow_id = '{CHORD}'"),
        due=ids(
            "status = 'queued' AND queue_name = 'emails' AND flow_key IS NULL"
            " AND expires_at IS NULL AND run_after <= now()"
            " ORDER BY priority DESC, run_after, id LIMIT 10"
        ),
        limited=ids("status = 'queued' AND flow_key IS NOT NULL ORDER BY id LIMIT 10"),
        flow_keys=[f"tenant-{n}" for n in range(PARTITIONS)],
        oldest_due_run_after=conn.execute(
            "SELECT min(run_after) FROM leasequeue_job WHERE status IN ('queued', 'retrying')"
            " AND flow_key IS NULL AND expires_at IS NULL AND run_after <= now()"
        ).fetchone()[0],
    )
