"""The tests ``docs/testing.md`` shows pass: its ``myapp/tests.py``, joined from the page's
blocks as a reader saves it (``tests/docs_snippets.py``), beside its ``myapp/tasks.py`` and
``myapp/signup.py``, run here: the ``TestCase`` classes by unittest, as ``manage.py test`` runs
them, the pytest functions with the ``leasequeue`` fixture's helpers, each in a transaction
rolled back after it (the ``db`` fixture's). Every page's blocks also run one by one in
``test_docs_snippets.py``."""

import importlib
import io
import sys
import unittest
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import django
import pytest
from django.db import transaction
from django.test import override_settings

from django_leasequeue.task import declared_schedules
from django_leasequeue.testing.fixture import LeaseQueueHelpers
from tests.support import docs_snippets
from tests.support.settings import docs as settings_docs

PAGE = "docs/testing.md"
TESTS = "myapp/tests.py"


@pytest.fixture
def page_tests(tmp_path, monkeypatch) -> Iterator[ModuleType]:
    """The page's test module, imported from its modules written under ``tmp_path``."""
    modules = docs_snippets.modules(PAGE)
    assert TESTS in modules
    for path, code in modules.items():
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        (target.parent / "__init__.py").touch()
        target.write_text(docs_snippets.as_pasted(code, django.VERSION))
    monkeypatch.syspath_prepend(str(tmp_path))
    schedules_before = dict(declared_schedules())
    try:
        with override_settings(TASKS=settings_docs.TASKS):
            yield importlib.import_module(docs_snippets.module_name(TESTS))
    finally:
        for name in [name for name in sys.modules if name.split(".")[0] == "myapp"]:
            del sys.modules[name]
        declared_schedules().clear()
        declared_schedules().update(schedules_before)


@pytest.mark.django_db(transaction=True)
def test_the_test_cases_of_the_page_pass(page_tests):
    suite = unittest.defaultTestLoader.loadTestsFromModule(page_tests)
    output = io.StringIO()
    result = unittest.TextTestRunner(stream=output, verbosity=2).run(suite)
    assert result.wasSuccessful(), output.getvalue()
    assert result.testsRun >= 10, output.getvalue()


@pytest.mark.django_db(transaction=True)
def test_the_pytest_tests_of_the_page_pass(page_tests):
    functions = [
        function
        for name, function in vars(page_tests).items()
        if name.startswith("test_") and callable(function)
    ]
    assert functions
    for function in functions:
        with transaction.atomic():
            function(leasequeue=LeaseQueueHelpers())
            transaction.set_rollback(True)


def test_the_page_is_in_the_docs_navigation():
    mkdocs = (Path(docs_snippets.ROOT) / "mkdocs.yml").read_text()
    assert "testing.md" in mkdocs
