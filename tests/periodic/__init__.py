"""Apps whose ``tasks`` modules declare schedules, for the periodic jobs' tests.

Each is installed only in the workers a periodic-jobs test starts (``LEASEQUEUE_TEST_APPS``,
see tests/support/settings/__init__.py), so that its schedules do not fire in the workers of
other tests.
"""
