"""A test run leaves nothing behind that breaks the next one, even when it is interrupted (a
pytest plugin: tests/conftest.py).

- SIGTERM ends a run as Ctrl-C does: the running test's teardown stops the workers it started
  and pytest-django drops the test databases. A second SIGTERM is ignored, so that it cannot
  cut that teardown short (``timeout`` signals dev.py and pytest alike).
- Before pytest-django drops a process's test databases, the sessions that the processes its
  tests killed last had open there get a moment to end (PostgreSQL notices a dead client a
  little after it died); one still there after that is ended, with a warning that names it.
- A run first ends what an earlier run that was killed outright left behind, and says so:
  processes started by the tests that still point at this run's test databases (the tests'
  processes die with their parent on Linux, see tests/support/processes.py), then those databases.
"""

import os
import re
import signal
import time
import warnings
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from django.conf import settings
from django.db import connections

_LEFT = "that an earlier run left behind"
# How long the sessions of processes killed at the end of a run get to end by themselves.
_SESSIONS_END_WITHIN = 5
# The names of this run's test databases, known before pytest-django renames the settings'.
_PATTERN = pytest.StashKey[re.Pattern[str]]()


def pytest_configure(config: pytest.Config) -> None:
    signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt(f"stopped by signal {signal.Signals(signum).name}")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Record this run's test database names (in every process, before any is made); then, in
    the process that runs the session (pytest-xdist starts its workers after this hook), end
    what an earlier run left behind."""
    config = session.config
    pattern = config.stash[_PATTERN] = _test_database_pattern()
    if hasattr(config, "workerinput") or config.getoption("reuse_db", False):
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if stopped := _stop_processes_using(pattern):
        pids = ", ".join(map(str, stopped))
        reporter.write_line(f"Stopped {len(stopped)} process(es) {_LEFT} (pids {pids}).")
    if dropped := _drop_databases(pattern):
        reporter.write_line(f"Dropped {len(dropped)} test database(s) {_LEFT}: {dropped}.")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Before pytest-django's teardown drops this process's test databases (if it made any)."""
    pattern = session.config.stash[_PATTERN]
    names = [db["NAME"] for db in settings.DATABASES.values() if pattern.fullmatch(db["NAME"])]
    if not names:
        return
    connections.close_all()
    with _maintenance_connection() as conn:
        deadline = time.monotonic() + _SESSIONS_END_WITHIN
        while (sessions := _sessions_on(conn, names)) and time.monotonic() < deadline:
            time.sleep(0.1)
        if sessions:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid",
                [[pid for pid, _ in sessions]],
            )
            warnings.warn(
                f"Ended {len(sessions)} session(s) still open on the test databases at the end "
                f"of the run: {sessions} (pid, application_name).",
                stacklevel=1,
            )


def _sessions_on(conn: psycopg.Connection, names: list[str]) -> list[tuple[int, str]]:
    return conn.execute(
        "SELECT pid, application_name FROM pg_stat_activity WHERE datname = ANY(%s)", [names]
    ).fetchall()


def _test_database_pattern() -> re.Pattern[str]:
    """The names of this run's test databases: pytest-django's ``test_`` prefix, and the
    ``_gw<n>`` suffix of a pytest-xdist worker, on each alias; the docs project's beside them."""
    names = "|".join(re.escape(db["NAME"]) for db in settings.DATABASES.values())
    return re.compile(rf"test_(?:{names})(?:_gw\d+)?(?:_docs)?")


def _stop_processes_using(pattern: re.Pattern[str]) -> list[int]:
    """SIGKILL the processes of this user whose DATABASE_URL names one of these databases
    (every process a test starts gets the test database's URL there)."""
    stopped = []
    for proc in Path("/proc").glob("[0-9]*"):
        pid = int(proc.name)
        try:
            if proc.stat().st_uid != os.getuid() or pid == os.getpid():
                continue
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:  # ended meanwhile, or not ours to read
            continue
        url = next((v[13:] for v in environ if v.startswith(b"DATABASE_URL=")), None)
        if url and pattern.fullmatch(urlsplit(url.decode(errors="replace")).path.lstrip("/")):
            try:
                os.kill(pid, signal.SIGKILL)
                stopped.append(pid)
            except ProcessLookupError:
                pass
    return stopped


def _maintenance_connection() -> psycopg.Connection:
    db = settings.DATABASES["default"]
    params = {"host": db["HOST"], "port": db["PORT"], "user": db["USER"]}
    return psycopg.connect(**params, password=db["PASSWORD"], dbname="postgres", autocommit=True)


def _drop_databases(pattern: re.Pattern[str]) -> list[str]:
    with _maintenance_connection() as conn:
        names = [row[0] for row in conn.execute("SELECT datname FROM pg_database")]
        stale = sorted(name for name in names if pattern.fullmatch(name))
        for name in stale:
            # FORCE: sessions of processes elsewhere (another machine, a psql) end too.
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return stale
