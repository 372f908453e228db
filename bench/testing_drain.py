"""The testing helpers' drain beside enqueue and Django's ImmediateBackend, inside a TestCase.

    python bench/testing_drain.py [--jobs 1000] [--repeats 7]

In a ``django.test.TestCase`` (its transaction, rolled back after each run), on the bench's own
database (lq_bench, or DATABASE_URL): ``--jobs`` trivial jobs (``bench.tasks.noop``) enqueued
one call at a time through our backend, then run by ``django_leasequeue.testing.drain()``;
beside them, the same calls through Django's ``ImmediateBackend``, which runs each one as it is
enqueued. Prints the median of ``--repeats`` runs of each (the three alternate run by run), and
the drain's cost against the enqueue of the same jobs (target: at most 2x). Redis is not needed:
in a TestCase nothing commits, so no wakeup is sent.
"""

import argparse
import os
import statistics
import sys
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

IMMEDIATE = "immediate"


def configure() -> None:
    """The bench's settings, with an ImmediateBackend beside ours; the database set up."""
    from bench import settings
    from bench.harness import setup_database

    settings.TASKS[IMMEDIATE] = {"BACKEND": "django.tasks.backends.immediate.ImmediateBackend"}
    setup_database()


def measure(jobs: int, repeats: int) -> dict[str, list[float]]:
    """Seconds per run of each step, ``repeats`` runs, each in a TestCase's transaction."""
    from django.test import TestCase

    from bench.tasks import noop
    from django_leasequeue.testing import drain

    times: dict[str, list[float]] = {"enqueue": [], "drain": [], "immediate": []}
    immediate = noop.using(backend=IMMEDIATE)

    class Run(TestCase):
        def test_run(self) -> None:
            started = time.perf_counter()
            for n in range(jobs):
                noop.enqueue(n)
            enqueued = time.perf_counter()
            done = drain()
            drained = time.perf_counter()
            for n in range(jobs):
                immediate.enqueue(n)
            ran = time.perf_counter()
            self.assertEqual(done.succeeded, jobs)
            times["enqueue"].append(enqueued - started)
            times["drain"].append(drained - enqueued)
            times["immediate"].append(ran - drained)

    runner = unittest.TextTestRunner(verbosity=0, stream=open(os.devnull, "w"))  # noqa: SIM115
    for _ in range(repeats + 1):  # the first run warms up (imports, plans, caches): dropped
        result = runner.run(unittest.defaultTestLoader.loadTestsFromTestCase(Run))
        if not result.wasSuccessful():
            raise SystemExit(f"The run failed: {(result.errors or result.failures)[0][1]}")
    return {name: values[1:] for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    options = parser.parse_args()
    configure()
    times = measure(options.jobs, options.repeats)
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"{options.jobs} trivial jobs in a TestCase, median of {options.repeats} runs:")
    for name, label in (
        ("enqueue", "enqueue (ours, one call at a time)"),
        ("drain", "drain (django_leasequeue.testing)"),
        ("immediate", "Django's ImmediateBackend (enqueue + run)"),
    ):
        seconds = median[name]
        print(f"  {label:<44} {seconds * 1000:8.1f} ms  {seconds / options.jobs * 1e6:6.0f} µs/job")
    ratio = median["drain"] / median["enqueue"]
    print(f"  drain / enqueue: {ratio:.2f}x (target: at most 2x)")


if __name__ == "__main__":
    main()
