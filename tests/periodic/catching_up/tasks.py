from datetime import timedelta

from django_leasequeue import task

FIVE_MINUTES = timedelta(minutes=5)


@task(every=FIVE_MINUTES, catch_up=0)
def no_catch_up(scheduled_at):
    return scheduled_at.isoformat()


@task(every=FIVE_MINUTES)
def default_catch_up(scheduled_at):
    return scheduled_at.isoformat()


@task(every=FIVE_MINUTES, catch_up=3)
def three_catch_up(scheduled_at):
    return scheduled_at.isoformat()
