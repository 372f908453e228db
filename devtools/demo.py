"""``python3 dev.py demo``: the example project with its web server and workers, until Ctrl-C."""

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from devtools import services, venv

DEMO_USER = "demo"
# How long the web server and the workers get to stop before they are killed.
_STOP_SECONDS = 15


def _manage(python: Path, *args: str) -> list[str]:
    return [str(python), str(venv.ROOT / "example_project" / "manage.py"), *args]


def _create_database(python: Path, database_url: str) -> None:
    """Create the demo's database on the server when it does not exist yet."""
    name = urlsplit(database_url).path.lstrip("/") or "test"
    script = (
        "import sys, psycopg\n"
        "from psycopg import sql\n"
        "url, name = sys.argv[1], sys.argv[2]\n"
        "with psycopg.connect(url, dbname='postgres', autocommit=True) as conn:\n"
        "    found = conn.execute('SELECT 1 FROM pg_database WHERE datname = %s', [name])\n"
        "    if not found.fetchone():\n"
        "        conn.execute(sql.SQL('CREATE DATABASE {}').format(sql.Identifier(name)))\n"
        "        print(f'Created database {name}.')\n"
    )
    subprocess.run([python, "-c", script, database_url, name], check=True)


def _demo_login(python: Path, env: dict[str, str]) -> str:
    """Create (or reset) the demo superuser with a new random password; return the password."""
    password = secrets.token_urlsafe(9)
    script = (
        "from django.contrib.auth import get_user_model\n"
        f"user, _ = get_user_model().objects.get_or_create(username={DEMO_USER!r})\n"
        "user.is_staff = user.is_superuser = True\n"
        f"user.set_password({password!r})\n"
        "user.save()\n"
    )
    subprocess.run(
        _manage(python, "shell", "-v", "0", "-c", script), env=env, check=True, cwd=venv.ROOT
    )
    return password


def _stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + _STOP_SECONDS
    for process in processes:
        try:
            process.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            print(f"pid {process.pid} did not stop in time; killing it.", flush=True)
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run(port: int, processes: int) -> int:
    python = venv.ensure("demo")
    signal.signal(signal.SIGTERM, _raise_interrupt)
    # Started in the background by a shell, SIGINT arrives ignored: make Ctrl-C (kill -INT) work.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with services.services() as urls:
        env = {
            **os.environ,
            **urls,
            "DJANGO_SETTINGS_MODULE": "example_project.settings",
            "PYTHONPATH": str(venv.ROOT),
            "PYTHONUNBUFFERED": "1",
        }
        _create_database(python, urls["DATABASE_URL"])
        subprocess.run(_manage(python, "migrate", "--no-input", "-v", "0"), env=env, check=True)
        password = _demo_login(python, env)
        if services.reachable(f"x://127.0.0.1:{port}"):
            port = services.free_port()
        # Own sessions: Ctrl-C reaches only this script, which stops them in order.
        web = subprocess.Popen(
            [
                python,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                str(port),
                "example_project.asgi:application",
            ],
            env=env,
            cwd=venv.ROOT,
            start_new_session=True,
        )
        workers = subprocess.Popen(
            _manage(python, "runworkers", "--processes", str(processes), "--grace", "5"),
            env=env,
            cwd=venv.ROOT,
            start_new_session=True,
        )
        children = [web, workers]
        try:
            deadline = time.monotonic() + 60
            while not services.reachable(f"x://127.0.0.1:{port}"):
                if web.poll() is not None or time.monotonic() > deadline:
                    print("The web server did not start.", file=sys.stderr)
                    return 1
                time.sleep(0.2)
            print(
                "\n"
                f"  Demo running at http://127.0.0.1:{port}/\n"
                f"  Sign in as {DEMO_USER!r} with password {password!r} (also the admin: "
                f"http://127.0.0.1:{port}/admin/)\n"
                "  Press Ctrl-C to stop the web server, the workers and any throwaway servers.\n",
                flush=True,
            )
            while all(child.poll() is None for child in children):
                time.sleep(0.5)
            print("A demo process exited; stopping the others.", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("\nStopping the demo ...", flush=True)
            return 0
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not skip cleanup
            _stop(children)
