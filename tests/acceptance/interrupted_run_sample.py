"""Not collected with the suite: test_interrupted_runs.py runs it in a pytest of its own. It
starts workers, writes their pids where ``LEASEQUEUE_SAMPLE_READY`` says, then waits for
``LEASEQUEUE_SAMPLE_WAIT`` seconds (for the outer test to interrupt it)."""

import json
import os
import time
from pathlib import Path

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db(transaction=True)


def test_waits_with_workers_running(start_workers):
    workers = start_workers("--processes", "2")
    pids = [workers.process.pid, *workers.wait_for_children(2)]
    ready = {"pids": pids, "database": connection.settings_dict["NAME"]}
    # Written whole under another name, then renamed: the outer test reads it once it exists.
    path = Path(os.environ["LEASEQUEUE_SAMPLE_READY"])
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(ready))
    partial.rename(path)
    time.sleep(float(os.environ["LEASEQUEUE_SAMPLE_WAIT"]))
