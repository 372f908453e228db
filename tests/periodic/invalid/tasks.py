from datetime import timedelta

from django_leasequeue import task


@task(cron="61 * * * *")
def bad_cron():
    pass


@task(every=timedelta(0))
def zero_interval():
    pass


@task(every=timedelta(minutes=1))
def needs_an_argument(user_id):
    pass


@task(every=timedelta(milliseconds=1), overlap="allow")
def too_often():
    pass


@task(cron_timezone="Europe/Paris")
def timezone_without_cron():
    pass


@task(catch_up=3)
def catch_up_without_a_schedule():
    pass
