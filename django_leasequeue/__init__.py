"""django-leasequeue: a django.tasks backend whose jobs live in PostgreSQL under leases."""

from django_leasequeue.task import LeaseTask, task

__all__ = ["LeaseTask", "task"]
