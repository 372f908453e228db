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
