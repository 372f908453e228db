"""The scheduled tasks of this process: registered by ``@task(cron=...)`` / ``@task(every=...)``
(and by a task giving ``overlap``, ``catch_up`` or ``cron_timezone`` without either, so that the
checks can refuse it), found by importing every installed app's ``tasks`` module (as the admin
finds ``admin``)."""

from django.utils.module_loading import autodiscover_modules

from django_leasequeue.task import LeaseTask, declared_schedules


def scheduled_tasks(backend_alias: str | None = None) -> list[LeaseTask]:
    """Import every installed app's ``tasks`` module, then list the scheduled tasks (of one
    backend, when given) by path."""
    autodiscover_modules("tasks")
    return [
        task
        for path, task in sorted(declared_schedules().items())
        if backend_alias is None or task.backend == backend_alias
    ]
