"""An interrupted test run does not break the next one (a pytest plugin: tests/conftest.py).

- SIGTERM ends a run as Ctrl-C does: the running test's teardown stops the workers it started
  and pytest-django drops the test databases. A second SIGTERM is ignored, so that it cannot
  cut that teardown short (``timeout`` signals dev.py and pytest alike).
- A run first ends what an earlier run that was killed outright left behind, and says so:
  processes started by the tests that still point at this run's test databases (the tests'
  processes die with their parent on Linux, see tests/processes.py), then those databases.
"""

import os
import re
import signal
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from django.conf import settings

_LEFT = "that an earlier run left behind"


def pytest_configure(config: pytest.Config) -> None:
    signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt(f"stopped by signal {signal.Signals(signum).name}")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Before any test database is made (pytest-xdist starts its workers after this hook): in
    the process that runs the session, not in each pytest-xdist worker."""
    config = session.config
    if hasattr(config, "workerinput") or config.getoption("reuse_db", False):
        return
    pattern = _test_database_pattern()
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if stopped := _stop_processes_using(pattern):
        pids = ", ".join(map(str, stopped))
        reporter.write_line(f"Stopped {len(stopped)} process(es) {_LEFT} (pids {pids}).")
    if dropped := _drop_databases(pattern):
        reporter.write_line(f"Dropped {len(dropped)} test database(s) {_LEFT}: {dropped}.")


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


def _drop_databases(pattern: re.Pattern[str]) -> list[str]:
    db = settings.DATABASES["default"]
    params = {"host": db["HOST"], "port": db["PORT"], "user": db["USER"]}
    with psycopg.connect(
        **params, password=db["PASSWORD"], dbname="postgres", autocommit=True
    ) as conn:
        names = [row[0] for row in conn.execute("SELECT datname FROM pg_database")]
        stale = sorted(name for name in names if pattern.fullmatch(name))
        for name in stale:
            # FORCE: sessions of processes elsewhere (another machine, a psql) end too.
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return stale
