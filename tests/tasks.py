"""Tasks the test suite enqueues."""

from django.tasks import task as django_task

from django_leasequeue import task


@django_task
def add(a, b):
    return a + b


@task(max_attempts=2, backoff_seconds=0.5)
def flaky(x):
    raise ValueError(f"flaky {x}")


@task(unique_key=lambda user_id: f"report:{user_id}")
def report(user_id):
    return user_id


@task(priority=5, queue_name="high", timeout=2)
async def async_echo(value):
    return value


not_a_task = 42


@task(max_attempts=5, backoff_seconds=0.001)
def quick_retry(x):
    return x


@task(max_attempts=2, backoff_seconds=0.001)
def poison(x):
    return x
