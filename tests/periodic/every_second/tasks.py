from datetime import timedelta

from django_leasequeue import task
from tests.periodic.runs import record_run


@task(every=timedelta(seconds=1), takes_context=True)
def tick(context, scheduled_at):
    record_run("tick", context, scheduled_at)
