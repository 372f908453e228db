"""Testing helpers for a project's own test suite (``docs/testing.md``): what was enqueued, and
jobs run in the test's process through the worker's own claim, run and completion code.

- ``enqueued_jobs``, ``assert_enqueued``, ``refute_enqueued``: the jobs not yet started or
  finished, read from the job table;
- ``drain`` / ``adrain``: run the due jobs here and now, as a worker would (leases and fencing,
  limits, checkpoints and progress, hooks, workflow releases, snoozes, expiry), on the caller's
  database connection: inside ``django.test.TestCase``'s transaction, with no worker process and
  no Redis, a task's own queries seeing the test's rows;
- ``run_job`` / ``arun_job``: one call of a task as a job, run once, its result or exception
  given back.

The drain runs the worker's statements at a clock of its own rather than at PostgreSQL's
``now()``, which inside the test's transaction is that transaction's start (possibly long
before): the database's wall clock, read as each round of claims starts. How: every statement
the drain runs is derived from the worker's own text with each ``now()`` made a parameter
(``sql/clock.py``), so the worker's statements, their plans and their costs are untouched; the
one whose worker form is a database function (the claim by ids) has a twin written out beside it
(``sql/clock.sql``). A parameter in the worker's statements (``coalesce(%(now)s, now())``) or a
session setting read by a function would have changed the plans of every claim on the hot path
for the sake of the tests. See ``drain.py`` for what the clock means to a drain.

The pytest fixture ``leasequeue`` (``django_leasequeue.pytest_plugin``, registered by the
package's ``pytest11`` entry point) offers the same functions as methods.
"""

from django_leasequeue.testing.assertions import assert_enqueued, enqueued_jobs, refute_enqueued
from django_leasequeue.testing.drain import adrain, drain
from django_leasequeue.testing.run_job import arun_job, run_job

__all__ = [
    "adrain",
    "arun_job",
    "assert_enqueued",
    "drain",
    "enqueued_jobs",
    "refute_enqueued",
    "run_job",
]
