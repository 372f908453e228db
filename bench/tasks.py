"""No-op tasks: the benchmark measures the queue, not the work."""

from django.tasks import task


@task
async def anoop(n):
    return n


@task
def noop(n):
    return n
