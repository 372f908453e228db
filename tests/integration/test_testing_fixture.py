"""The ``leasequeue`` pytest fixture: the testing helpers as methods, with the database access
it needs asked for by itself; the package registers it with pytest (``pytest11``)."""

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from django.db import connection

from django_leasequeue import testing
from tests.acceptance import harness
from tests.support.tasks import testing as tasks

ROOT = Path(__file__).resolve().parents[2]


def test_the_fixture_gives_the_helpers_and_asks_for_the_database_itself(leasequeue):
    """No django_db mark here: the fixture asked for pytest-django's ``db``."""
    assert connection.in_atomic_block  # the test's transaction, rolled back after it
    tasks.send_welcome.enqueue(1)
    leasequeue.assert_enqueued(tasks.send_welcome, args=[1])
    assert [result.args for result in leasequeue.enqueued_jobs(tasks.send_welcome)] == [[1]]
    assert leasequeue.drain().succeeded == 1
    leasequeue.refute_enqueued(tasks.send_welcome)
    assert leasequeue.run_job(tasks.returns, 2) == 2


def test_every_helper_of_the_module_is_a_method_of_the_fixture(leasequeue):
    assert set(testing.__all__) == {
        "enqueued_jobs",
        "assert_enqueued",
        "refute_enqueued",
        "drain",
        "adrain",
        "run_job",
        "arun_job",
    }
    for name in testing.__all__:
        assert getattr(leasequeue, name) is getattr(testing, name)


@pytest.mark.django_db(transaction=True)
def test_a_transactional_test_keeps_the_access_it_asked_for(leasequeue):
    assert not connection.in_atomic_block
    tasks.counts_down.enqueue(1)
    assert leasequeue.drain().succeeded == 2


async def test_an_async_test_gets_a_flushed_database_not_a_rolled_back_one(leasequeue, request):
    """Its ORM calls run outside db's transaction: what they commit is flushed after it."""
    assert "transactional_db" in request.fixturenames
    assert "db" not in request.fixturenames
    await tasks.send_welcome.aenqueue(3)
    assert (await leasequeue.adrain()).succeeded == 1


# A user's test module: an async test that commits jobs, then tests that must not see them.
USERS_SUITE = """
import pytest

from django_leasequeue.models import Job
from tests.support.tasks import testing as tasks


async def test_an_async_test_commits_and_drains(leasequeue):
    await tasks.send_welcome.aenqueue(3)
    assert (await leasequeue.adrain()).succeeded == 1


def test_the_next_test_finds_no_job(leasequeue):
    assert Job.objects.count() == 0


@pytest.mark.django_db(databases=["default"])
async def test_a_marked_async_test_commits_and_drains(leasequeue):
    assert await Job.objects.acount() == 0
    await tasks.send_welcome.aenqueue(4)
    assert (await leasequeue.adrain()).succeeded == 1


async def test_nor_does_the_next_async_one(leasequeue):
    assert await Job.objects.acount() == 0
"""


@pytest.mark.django_db  # this process's test database name, with its xdist suffix
def test_an_async_tests_jobs_are_gone_before_the_next_test_of_a_users_suite(tmp_path):
    """A pytest of its own over a user's module (the package's plugin, pytest-django and
    pytest-asyncio alone): the async test got a flush, not a rollback its rows escaped."""
    (tmp_path / "test_users_suite.py").write_text(USERS_SUITE)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.support.settings",
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": f"{harness.test_database_url()}_users",
        "LEASEQUEUE_TEST_KEY_PREFIX": f"{connection.settings_dict['NAME']}-users",
    }
    env.pop("PYTEST_XDIST_WORKER", None)  # not one of this run's processes
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "asyncio_mode=auto"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "4 passed" in run.stdout


def test_the_package_registers_the_plugin_with_pytest():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"leasequeue": "django_leasequeue.pytest_plugin"}


def test_the_plugin_imports_before_django_is_set_up():
    """pytest loads entry-point plugins before pytest-django configures Django."""
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    subprocess.run(
        [sys.executable, "-c", "import django_leasequeue.pytest_plugin"],
        cwd=ROOT,
        env=env,
        check=True,
    )
