"""One exception family (issue 36): every exception class the package defines lives in
``exceptions.py``, derives from ``LeaseQueueError``, and is exported by the package."""

import importlib
import inspect
import pkgutil

import django_leasequeue
from django_leasequeue import exceptions
from django_leasequeue.tasks_framework import InvalidTask


def _exception_classes_defined_outside_exceptions_py() -> list[str]:
    """Every exception class any of the package's modules defines (each module imported, so a
    class is found whatever its bases are named), but for those of exceptions.py."""
    found = []
    for info in pkgutil.walk_packages(django_leasequeue.__path__, "django_leasequeue."):
        if ".migrations" in info.name or info.name == exceptions.__name__:
            continue
        module = importlib.import_module(info.name)
        found += [
            f"{info.name}.{name}"
            for name, value in vars(module).items()
            if inspect.isclass(value)
            and issubclass(value, BaseException)
            and value.__module__ == info.name
        ]
    return found


def _defined_here() -> list[type[BaseException]]:
    return [
        value
        for value in vars(exceptions).values()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == exceptions.__name__
    ]


def test_every_exception_class_lives_in_exceptions_py():
    assert _exception_classes_defined_outside_exceptions_py() == []


def test_every_exception_is_a_lease_queue_error_and_exported():
    defined = _defined_here()
    assert len(defined) >= 20
    for cls in defined:
        assert issubclass(cls, exceptions.LeaseQueueError), cls
        assert cls.__name__ in django_leasequeue.__all__, cls
        assert getattr(django_leasequeue, cls.__name__) is cls


def test_djangos_and_pythons_bases_stay_where_callers_expect_them():
    assert issubclass(exceptions.InvalidTaskArguments, InvalidTask)
    assert issubclass(exceptions.InvalidTaskArguments, TypeError)
    assert issubclass(exceptions.InvalidDuration, InvalidTask)
    assert issubclass(exceptions.InvalidDuration, ValueError)
    assert issubclass(exceptions.InvalidWorkflow, InvalidTask)
    assert issubclass(exceptions.InvalidScheduledCall, exceptions.InvalidSchedule)
    assert issubclass(exceptions.LimitError, ValueError)
