"""``LeaseQueueHelpers``: the testing helpers as methods, what pytest's ``leasequeue`` fixture
gives (``django_leasequeue.pytest_plugin``)."""

from django_leasequeue.testing.assertions import assert_enqueued, enqueued_jobs, refute_enqueued
from django_leasequeue.testing.drain import adrain, drain
from django_leasequeue.testing.run_job import arun_job, run_job


class LeaseQueueHelpers:
    """``leasequeue.assert_enqueued(...)``, ``leasequeue.drain()``...: the functions of
    ``django_leasequeue.testing``, each documented there."""

    enqueued_jobs = staticmethod(enqueued_jobs)
    assert_enqueued = staticmethod(assert_enqueued)
    refute_enqueued = staticmethod(refute_enqueued)
    drain = staticmethod(drain)
    adrain = staticmethod(adrain)
    run_job = staticmethod(run_job)
    arun_job = staticmethod(arun_job)
