from datetime import timedelta

from django_leasequeue import task
from tests.periodic.runs import record_run


@task(every=timedelta(seconds=1), overlap="skip", takes_context=True, timeout=30)
def slow_tick(context, scheduled_at):
    record_run("slow_tick", context, scheduled_at, seconds=3)
