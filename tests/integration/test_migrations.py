"""The squashed migration (0001_squashed_0023) makes the schema the old chain 0001-0023 made, and
a database part way along the old chain migrates on to the end.

Two scratch databases beside the test database: one migrated as a new database is (Django picks
the squash), one taken through the old chain to 0010 and then migrated on (Django goes on through
0011-0023, the old files, and records the squash). What PostgreSQL holds of their schemas
(tables, columns in order, defaults, constraints, indexes, storage options, functions,
triggers) must be the same. ``migrate`` runs in a process of its own on each database.
"""

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import django
import psycopg
import pytest
from django.db import connection

from tests.support.processes import popen_options

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
SQUASH = "0001_squashed_0023_unique_keys_per_task"
OLD_CHAIN = [
    "0001_initial",
    "0002_claim_order_index",
    "0003_admin_indexes",
    "0004_finished_index_partial",
    "0005_tolerant_json",
    "0006_flow_control",
    "0007_operators",
    "0008_schedules",
    "0009_workflows",
    "0010_workflow_permissions",
    "0011_queue_control",
    "0012_workflow_fan_in",
    "0013_job_meta",
    "0014_pause_permission_of_its_own",
    "0015_claim_heads_with_and_without_expiry",
    "0016_steps_completed_per_statement",
    "0017_completions_by_primary_key",
    "0018_complete_many_plan_cached",
    "0019_release_locks_children_by_key",
    "0020_cached_plans_by_key",
    "0021_claim_batch_plan_cached",
    "0022_enqueue_plain_plan_cached",
    "0023_unique_keys_per_task",
]
# Migrations after the squash, which both databases go through alike.
AFTER_SQUASH = [
    "0024_failure_groups",
    "0025_queue_history",
    "0026_estimates_follow_bursts",
    "0027_poll_claim_starts_after_a_position",
]

# What a schema is made of, each as rows that sort the same whatever the order of creation.
_SCHEMA = {
    "relations": """
        SELECT c.relname, c.relkind, c.reloptions::text FROM pg_class AS c
        WHERE c.relnamespace = 'public'::regnamespace""",
    "columns": """
        SELECT c.relname,
               array_agg(array[a.attname, format_type(a.atttypid, a.atttypmod),
                               a.attnotnull::text, coalesce(pg_get_expr(d.adbin, d.adrelid), ''),
                               a.attidentity::text] ORDER BY a.attnum)::text
        FROM pg_attribute AS a
        JOIN pg_class AS c ON c.oid = a.attrelid
        LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm')
          AND a.attnum > 0 AND NOT a.attisdropped
        GROUP BY c.relname""",
    "constraints": """
        SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint
        WHERE connamespace = 'public'::regnamespace""",
    "indexes": "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'",
    "functions": """
        SELECT oid::regprocedure::text, pg_get_functiondef(oid) FROM pg_proc
        WHERE pronamespace = 'public'::regnamespace""",
    "triggers": "SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal",
}


def _connect(dbname: str) -> psycopg.Connection:
    db = connection.settings_dict
    return psycopg.connect(
        host=db["HOST"],
        port=db["PORT"],
        user=db["USER"],
        password=db["PASSWORD"],
        dbname=dbname,
        autocommit=True,
    )


def _url(dbname: str) -> str:
    db = connection.settings_dict
    password = f":{quote(db['PASSWORD'], safe='')}" if db["PASSWORD"] else ""
    return f"postgres://{quote(db['USER'], safe='')}{password}@{db['HOST']}:{db['PORT']}/{dbname}"


def _migrate(dbname: str, *target: str) -> None:
    env = {**os.environ, "DATABASE_URL": _url(dbname), "PYTHONPATH": str(ROOT)}
    command = [
        sys.executable,
        "-m",
        "django",
        "migrate",
        *target,
        "--settings",
        "tests.support.settings",
    ]
    done = subprocess.run(
        [*command, "--noinput", "-v", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        **popen_options(env),
    )
    assert done.returncode == 0, done.stderr


def _schema(dbname: str) -> dict[str, list[tuple]]:
    with _connect(dbname) as conn:
        return {part: sorted(conn.execute(query).fetchall()) for part, query in _SCHEMA.items()}


def _applied(dbname: str) -> list[str]:
    with _connect(dbname) as conn:
        rows = conn.execute("SELECT name FROM django_migrations WHERE app = 'leasequeue'")
        return sorted(name for (name,) in rows)


@pytest.fixture
def scratch_databases():
    """Two empty databases named after the test database, dropped afterwards."""
    names = [f"{connection.settings_dict['NAME']}_{which}" for which in ("squash", "chain")]
    with _connect("postgres") as conn:
        for name in names:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
    yield names
    with _connect("postgres") as conn:
        for name in names:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.skipif(
    django.VERSION < (6, 0),
    reason="Django 5.2 cannot take a new database to a replaced migration (0010): its graph holds "
    "the squash instead; a database already part way migrates on through the old files on both",
)
def test_the_squash_and_the_old_chain_make_the_same_schema(scratch_databases):
    squashed, chained = scratch_databases
    _migrate(squashed)
    _migrate(chained, "auth")  # the post-migrate handlers of a partial migrate need its tables
    _migrate(chained, "leasequeue", "0010_workflow_permissions")
    assert _applied(chained) == OLD_CHAIN[:10]
    _migrate(chained)  # part way along the old chain: on through its files to the end

    assert _applied(chained) == sorted([*OLD_CHAIN, SQUASH, *AFTER_SQUASH])
    assert _applied(squashed) == sorted([*OLD_CHAIN, SQUASH, *AFTER_SQUASH])
    squashed_schema, chained_schema = _schema(squashed), _schema(chained)
    assert len(squashed_schema["functions"]) >= 7 and squashed_schema["triggers"]
    for part in _SCHEMA:
        assert squashed_schema[part] == chained_schema[part], part
