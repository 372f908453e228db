from datetime import timedelta

from django_leasequeue import task
from tests.periodic.runs import record_run


# overlap="allow": every tick gets its job even while a killed worker's job waits for its lease
# to expire (with "skip" that tick is rightly skipped; the tests count ticks, not skips).
@task(every=timedelta(seconds=1), overlap="allow", takes_context=True)
def tick(context, scheduled_at):
    record_run("tick", context, scheduled_at)
