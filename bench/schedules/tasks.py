"""``SCHEDULES`` daily schedules (at 03:00, so none fires during a run): the workers' cost is
their once-a-second check, not extra jobs."""

import types

from django_leasequeue import task

SCHEDULES = 100


def _daily() -> None:
    """Does nothing; copied under ``SCHEDULES`` names below."""


for _n in range(SCHEDULES):
    _name = f"daily_{_n:03d}"
    _func = types.FunctionType(_daily.__code__, globals(), _name)
    _func.__qualname__ = _name
    globals()[_name] = task(cron="0 3 * * *")(_func)
