"""The admin: the Jobs, Workers, Schedules and Workflows pages, each registered by its own
module on import.

Its modules, one line each: docs/architecture.md, *Packages and modules*.
"""

from django_leasequeue.admin import jobs, schedules, workers, workflows
from django_leasequeue.admin.jobs import JobAdmin

__all__ = ["JobAdmin", "jobs", "schedules", "workers", "workflows"]
