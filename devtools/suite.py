"""``dev.py test``: lint, the import layers, the type check and docs, then the migration check
and the test suite on each Django series, one after the other; each phase timed (see the README
for how long and why)."""

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

from devtools import browser, children, pgbouncer, services, venv
from devtools.phases import Phases

# The Django series the suite runs on: None is the newest release (``.venv``), then the LTS.
DJANGO_SERIES = {"newest": None, "5.2": "5.2"}
# The tests that run with the first series of the run only (see the README): the slow fault
# tests, whose outcome does not depend on Django's version, and the browser tests, which add
# our JavaScript in Chromium to what each series' admin and progress tests already cover.
ONE_SERIES = "django_independent or browser"
# Test files run in parallel (pytest-xdist), one series after the other: the slow tests mostly
# wait on workers, PostgreSQL and clocks, so more processes than cores pay off; far more would
# make crash tests that time their recovery flaky on a 2-core machine. Each process has its own
# test databases and Redis key prefix (tests/support/settings/__init__.py).
PROCESSES = {"first": 3, "others": 3}


def run(pytest_args: list[str], series: list[str]) -> int:
    """Lint, types and docs, then the migration check and the suite on each Django series, one
    after the other; fails when any of them fails. Prints each phase's time at the end."""
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
        # The package's layers: no module imports one of a higher layer, so there is no
        # cycle (the import-linter contract in pyproject.toml; docs/architecture.md, "Layers").
        ("import layers", [[str(Path(python).parent / "lint-imports")]]),
        # The package's types, against Django 6's stubs (configured in pyproject.toml).
        ("type check", [[python, "-m", "mypy"]]),
        # The documentation site, warnings (e.g. a broken link) as errors. Not --quiet: it
        # silences the warning count that --strict relies on, so nothing would fail.
        ("docs", [[python, "-m", "mkdocs", "build", "--strict"]]),
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
            # One series after the other: side by side, five test processes and their workers on
            # two cores made the tests that time their recovery fail (seen in CI).
            passed = {
                name: _suite(phases, name, pythons[name].result, env, pytest_args, first=index == 0)
                for index, name in enumerate(series)
            }
    failed = [name for name, ok in passed.items() if not ok]
    if failed:
        print(f"The suite failed on Django {', '.join(failed)}.", file=sys.stderr)
    return 1 if failed else 0


def _environment(phases: Phases, name: str) -> Path:
    with phases.phase(f"environment: Django {name}"):
        return venv.ensure("test", DJANGO_SERIES[name])


def _suite(phases, name, python, env, pytest_args, *, first: bool) -> bool:
    """The migration check and the suite on one series (``python()``: its interpreter, once its
    environment is made). The first series runs every test; the others leave out the tests
    whose outcome does not depend on Django's version."""
    python = python()
    label = f"Django {name} ({_django_version(python)})"
    with phases.phase(f"migration check, {label}") as phase:
        phase.ok = _migrations_match(python, env)
    if not phase.ok or children.interrupted_by():
        return False
    command = [python, "-m", "pytest", "--dist", "worksteal", "--durations", "15"]
    if first:
        command += ["-n", str(PROCESSES["first"]), *pytest_args]
    else:
        command += ["-n", str(PROCESSES["others"]), "-m", f"not ({ONE_SERIES})", *pytest_args]
        env = _apart(env, name)
    with phases.phase(f"tests, {label}") as phase:
        phase.ok = children.run(command, cwd=venv.ROOT, env=env) == 0
    return phase.ok


def _apart(env: dict[str, str], name: str) -> dict[str, str]:
    """The environment of a later series: test databases of its own (named
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
    check += ["--settings", "tests.support.settings", "--pythonpath", "."]
    if children.run(check, cwd=venv.ROOT, env=env):
        print("Models and migrations disagree: run makemigrations.", file=sys.stderr)
        return False
    return True
