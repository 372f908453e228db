"""One exception family (issue 36): every exception class the package defines lives in
``exceptions.py``, derives from ``LeaseQueueError``, and is exported by the package."""

import ast
import inspect
from pathlib import Path

import django_leasequeue
from django_leasequeue import exceptions
from django_leasequeue.tasks_framework import InvalidTask

PACKAGE = Path(django_leasequeue.__file__).parent


def _exception_classes_defined_outside_exceptions_py() -> list[str]:
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "exceptions.py" or "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(base, ast.Name)
                and (base.id.endswith(("Error", "Exception")) or base.id.startswith("Invalid"))
                for base in node.bases
            ):
                found.append(f"{path.relative_to(PACKAGE)}:{node.name}")
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
