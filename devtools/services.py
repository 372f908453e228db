"""PostgreSQL and Redis for tests and the demo: the configured ones, or throwaway local ones.

``DATABASE_URL`` / ``REDIS_URL`` (defaults: the usual local ports) are used when reachable.
Otherwise a throwaway server is started from the system's binaries (``initdb``/``pg_ctl``,
``redis-server``) in a temporary directory on a free port, and stopped on exit.
"""

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/test"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


def reachable(url: str) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname, parts.port), timeout=1):
            return True
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_port(port: int, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not reachable(f"x://127.0.0.1:{port}"):
        if time.monotonic() > deadline:
            raise SystemExit(f"{what} did not start listening on port {port} within {timeout}s.")
        time.sleep(0.1)


def _postgres_binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[str]:
    initdb, pg_ctl = _postgres_binary("initdb"), _postgres_binary("pg_ctl")
    if not (initdb and pg_ctl):
        raise SystemExit(
            "No PostgreSQL is reachable at DATABASE_URL and no initdb/pg_ctl is installed to "
            "start a throwaway one. Install PostgreSQL (e.g. apt install postgresql) or set "
            "DATABASE_URL to a server you can reach."
        )
    as_postgres: list[str] = []
    workdir = tempfile.mkdtemp(prefix="leasequeue-pg-")
    if os.geteuid() == 0:  # initdb refuses to run as root
        as_postgres = ["runuser", "-u", "postgres", "--"]
        shutil.chown(workdir, "postgres")
    data, port = os.path.join(workdir, "data"), free_port()
    subprocess.run(
        [*as_postgres, initdb, "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    options = f"-p {port} -c listen_addresses=127.0.0.1 -k {workdir} -c fsync=off"
    subprocess.run(
        [*as_postgres, pg_ctl, "-D", data, "-o", options, "-l", f"{workdir}/log", "-w", "start"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, "PostgreSQL")
        subprocess.run(
            [
                *as_postgres,
                _postgres_binary("createdb") or "createdb",
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
                "-U",
                "postgres",
                "test",
            ],
            check=True,
        )
        print(f"Started a throwaway PostgreSQL on port {port} ({workdir}).", flush=True)
        yield f"postgres://postgres@127.0.0.1:{port}/test"
    finally:
        subprocess.run(
            [*as_postgres, pg_ctl, "-D", data, "-m", "immediate", "stop"],
            stdout=subprocess.DEVNULL,
            check=False,
        )
        shutil.rmtree(workdir, ignore_errors=True)


@contextlib.contextmanager
def throwaway_redis() -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit(
            "No Redis is reachable at REDIS_URL and redis-server is not installed to start a "
            "throwaway one. Install Redis (e.g. apt install redis-server) or set REDIS_URL."
        )
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, "Redis")
        print(f"Started a throwaway Redis on port {port}.", flush=True)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.kill()
        process.wait()


@contextlib.contextmanager
def services() -> Iterator[dict[str, str]]:
    """Environment variables pointing at a reachable PostgreSQL and Redis, for the duration."""
    database_url = os.environ.get("DATABASE_URL", DEFAULT_DATABASE_URL)
    redis_url = os.environ.get("REDIS_URL", DEFAULT_REDIS_URL)
    with contextlib.ExitStack() as stack:
        if not reachable(database_url):
            print(f"PostgreSQL is not reachable at {database_url}.", flush=True)
            database_url = stack.enter_context(throwaway_postgres())
        if not reachable(redis_url):
            print(f"Redis is not reachable at {redis_url}.", flush=True)
            redis_url = stack.enter_context(throwaway_redis())
        yield {"DATABASE_URL": database_url, "REDIS_URL": redis_url}
