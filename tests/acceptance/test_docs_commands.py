"""Every shell command of the docs (``docs/*.md``) runs against the test project.

A command is ``python manage.py ...``: it runs as written, with the test project's settings
(those that declare the docs' queues too) and database. ``runworkers`` serves until stopped, so
it runs until its worker processes are up, then is stopped as an operator would (SIGTERM) and
must end cleanly. A block that cannot run here (a benchmark, a web server, ``pip install``) is
marked ``<!-- docs-test: skip: why -->`` and reported as skipped with that reason; the Python
snippets run in ``tests/integration/test_docs_snippets.py``.
"""

import os
import shlex
import subprocess
import sys

import pytest

from tests.acceptance import harness
from tests.support import docs_snippets

pytestmark = pytest.mark.django_db(transaction=True)

SETTINGS = "tests.support.settings.docs"
COMMANDS = [
    (str(doc.relative_to(docs_snippets.ROOT)), block)
    for doc in sorted(docs_snippets.ROOT.glob("docs/*.md"))
    for block in docs_snippets.blocks(doc)
    if block.lang == "sh"
]


def command_lines(code: str) -> list[list[str]]:
    """The block's commands, each as its arguments (comments dropped, ``\\`` lines joined)."""
    text = code.replace("\\\n", " ")
    return [args for line in text.splitlines() if (args := shlex.split(line, comments=True))]


def _run_workers(args: list[str], tmp_path) -> None:
    processes = int(args[args.index("--processes") + 1]) if "--processes" in args else 1
    workers = harness.Workers(
        *args, env={"DJANGO_SETTINGS_MODULE": SETTINGS}, log_path=tmp_path / "workers.log"
    )
    try:
        workers.wait_for_children(processes)
    finally:
        code = workers.stop()
    assert code == 0, workers.log()
    assert "Traceback" not in workers.log(), workers.log()


def _run(args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "django", *args],
        cwd=harness.ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": SETTINGS,
            "DATABASE_URL": harness.test_database_url(),
            "PYTHONPATH": str(harness.ROOT),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("doc", "block"), COMMANDS, ids=[f"{doc}:{block.line}" for doc, block in COMMANDS]
)
def test_a_docs_command_runs(doc, block, tmp_path):
    if block.skip:
        pytest.skip(f"{doc}:{block.line}: {block.skip}")
    for args in command_lines(block.code):
        assert args[:2] == ["python", "manage.py"], (
            f"{doc}:{block.line}: {shlex.join(args)} is not a manage.py command; "
            "mark the block with <!-- docs-test: skip: why --> if it cannot run here"
        )
        if args[2] == "runworkers":
            _run_workers(args[3:], tmp_path)
        else:
            _run(args[2:])


def test_the_command_lines_are_read_as_a_shell_would():
    code = "python manage.py prunejobs --days 14   # cron\n\npython manage.py x \\\n  --y 1\n"
    assert command_lines(code) == [
        ["python", "manage.py", "prunejobs", "--days", "14"],
        ["python", "manage.py", "x", "--y", "1"],
    ]
