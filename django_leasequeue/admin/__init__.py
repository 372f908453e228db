"""The admin: the Jobs, Workers and Schedules pages, each registered by its own module.

``jobs`` (``JobAdmin``: the job list with per-queue health, the read-only detail page),
``workers`` (the read-only Workers page), ``schedules`` (the Schedules page: pause, resume, run
now); with ``actions`` (what operators can do to jobs), ``display`` (how values are shown),
``filters`` and ``pagination`` (list views that stay fast on millions of rows). Importing this
package registers the three pages.
"""

from django_leasequeue.admin import jobs, schedules, workers
from django_leasequeue.admin.jobs import JobAdmin

__all__ = ["JobAdmin", "jobs", "schedules", "workers"]
