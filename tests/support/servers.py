"""Throwaway servers that a test owns: started on a free port, stopped (or killed) at will."""

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import redis

from devtools.services import free_port
from tests.support.processes import popen_options


class RedisServer:
    """A redis-server process on its own port, with no persistence."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def caches(self) -> dict:
        """``CACHES`` pointing the default cache at this server (for ``override_settings``)."""
        return {
            "default": {
                "BACKEND": "django_redis.cache.RedisCache",
                "LOCATION": self.url,
                "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 0.5, "SOCKET_TIMEOUT": 2},
            }
        }

    def start(self) -> "RedisServer":
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed; the test needs its own Redis.")
        self.process = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            **popen_options(dict(os.environ)),
        )
        client = redis.Redis(port=self.port)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                return self
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def __enter__(self) -> "RedisServer":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class PostgresServer:
    """A PostgreSQL cluster of the test's own (``initdb`` in a temporary directory, a free port,
    trust authentication), so that the test can stop it and start it again. As root, it runs as
    the ``postgres`` account (PostgreSQL refuses to run as root)."""

    def __init__(self) -> None:
        initdb = shutil.which("initdb")
        if initdb is None:
            raise RuntimeError("initdb is not installed; the test needs its own PostgreSQL.")
        # PATH may hold a symlink to initdb alone: pg_ctl is in the installation's bin.
        self._bin = Path(initdb).resolve().parent
        self.port = free_port()
        self.workdir = Path(tempfile.mkdtemp(prefix="leasequeue-pg-"))
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            self._as_user = ["runuser", "-u", "postgres", "--"]
            shutil.chown(self.workdir, "postgres")
        self._run("initdb", "-D", self.workdir / "data", "-U", "postgres", "--auth=trust")

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> "PostgresServer":
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.workdir} -c fsync=off"
        data, log = self.workdir / "data", self.workdir / "log"
        self._run("pg_ctl", "-D", data, "-o", options, "-l", log, "-w", "start")
        return self

    def stop(self, mode: str = "fast") -> None:
        """Stop the server: ``fast`` ends every session (a restart), ``immediate`` is a crash."""
        self._run("pg_ctl", "-D", self.workdir / "data", "-m", mode, "-w", "stop")

    def remove(self) -> None:
        if (self.workdir / "data" / "postmaster.pid").exists():
            self.stop("immediate")
        shutil.rmtree(self.workdir, ignore_errors=True)

    def _run(self, program: str, *args: object) -> None:
        subprocess.run(
            [*self._as_user, self._bin / program, *map(str, args)],
            check=True,
            stdout=subprocess.DEVNULL,
        )


class PgBouncerServer:
    """A PgBouncer of the test's own in front of ``target`` (host, port), on a free port, in
    ``pool_mode`` (transaction pooling by default: the mode that breaks session state). As root
    it runs as the ``postgres`` account (PgBouncer refuses to run as root).

    ``ignore_startup_parameters = options``: PgBouncer (before 1.20's ``track_extra_parameters``)
    refuses a client that sends ``options``, and the worker sends its ``statement_timeout``
    there; ``extra_float_digits`` is what some drivers send."""

    def __init__(self, binary: str, target: tuple[str, int], pool_mode: str = "transaction"):
        self.binary = binary
        self.port = free_port()
        self.workdir = Path(tempfile.mkdtemp(prefix="leasequeue-pgbouncer-"))
        host, port = target
        (self.workdir / "userlist.txt").write_text('"postgres" ""\n')
        (self.workdir / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"* = host={host} port={port}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {self.port}\n"
            "unix_socket_dir =\n"
            "auth_type = trust\n"
            f"auth_file = {self.workdir / 'userlist.txt'}\n"
            f"pool_mode = {pool_mode}\n"
            "max_client_conn = 1000\n"
            "default_pool_size = 20\n"
            "ignore_startup_parameters = options, extra_float_digits\n"
            f"logfile = {self.workdir / 'pgbouncer.log'}\n"
        )
        # Switched to by Popen itself, before the parent-death signal is set: a runuser in
        # between would leave PgBouncer behind when the test process dies.
        self._account: dict = {}
        if os.geteuid() == 0:
            self._account = {"user": "postgres", "group": "postgres", "extra_groups": []}
            for path in (self.workdir, *self.workdir.iterdir()):
                shutil.chown(path, "postgres")
        self.process: subprocess.Popen | None = None

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> "PgBouncerServer":
        self.process = subprocess.Popen(
            [self.binary, str(self.workdir / "pgbouncer.ini")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            **self._account,
            **popen_options(dict(os.environ)),
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"PgBouncer did not start:\n{self.log()}") from None
                time.sleep(0.05)

    def log(self) -> str:
        path = self.workdir / "pgbouncer.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None
        shutil.rmtree(self.workdir, ignore_errors=True)
