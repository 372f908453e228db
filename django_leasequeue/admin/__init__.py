"""The admin: the Jobs, Workers, Schedules and Workflows pages, each registered by its own
module on import.

Its modules, one line each: docs/architecture.md, *Packages and modules*.
"""

from django_leasequeue.admin import job_admin, schedule_admin, worker_admin, workflow_admin
from django_leasequeue.admin.job_admin import JobAdmin

__all__ = ["JobAdmin", "job_admin", "schedule_admin", "worker_admin", "workflow_admin"]
