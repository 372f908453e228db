from datetime import timedelta

from django_leasequeue import task

FIVE_MINUTES = timedelta(minutes=5)


@task(every=FIVE_MINUTES, catch_up=0)
def no_catch_up(scheduled_at):
    return scheduled_at.isoformat()


@task(every=FIVE_MINUTES)
def default_catch_up(scheduled_at):
    return scheduled_at.isoformat()


# overlap="allow": with "skip" the 2nd and 3rd caught-up ticks would be skipped while the 1st
# is unfinished (check leasequeue.W020 says so).
@task(every=FIVE_MINUTES, catch_up=3, overlap="allow")
def three_catch_up(scheduled_at):
    return scheduled_at.isoformat()
