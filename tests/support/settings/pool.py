"""The test settings with Django's connection pool (``OPTIONS["pool"]``, Django 5.1+) on the
default database: a supervisor that opened it must not hand it to the workers it forks."""

from tests.support.settings import *  # noqa: F403

DATABASES["default"] = {  # noqa: F405
    **DATABASES["default"],  # noqa: F405
    "CONN_MAX_AGE": 0,  # a pool refuses persistent connections
    "OPTIONS": {"pool": True},
}
