"""Worker processes that cannot start: runworkers shows the error once and gives up, instead of
restarting them for ever. And a manage.py without the ``__main__`` guard. Real processes."""

import os
import signal
import subprocess
import sys
import time

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from django_leasequeue.models import Job
from django_leasequeue.runtime.supervisor import STARTUP_ATTEMPTS
from tests.acceptance import harness
from tests.acceptance.harness import wait_until
from tests.support.servers import free_port
from tests.support.tasks.basic import add, pools_found

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

# STARTUP_ATTEMPTS starts take 20-50 s here (restart delays 0.5 + 1 + 2 + 5 s and Django's
# start-up each time); the bound leaves room for a loaded 2-core machine.
GIVE_UP_WITHIN_SECONDS = 120


def _missing_database_url() -> str:
    return harness.test_database_url().rsplit("/", 1)[0] + "/leasequeue_no_such_database"


@pytest.mark.django_independent
def test_workers_refused_by_postgresql_end_runworkers_with_the_error_shown_once(start_workers):
    started = time.monotonic()
    workers = start_workers("--processes", "2", database_url=_missing_database_url())
    code = workers.process.wait(GIVE_UP_WITHIN_SECONDS)
    took = time.monotonic() - started
    log = workers.log()
    assert code != 0
    assert log.count('database "leasequeue_no_such_database" does not exist') == 1, log
    assert f"could not start ({STARTUP_ATTEMPTS} attempt(s) in a row" in log
    assert log.count("Traceback") == 1
    print(f"gave up after {STARTUP_ATTEMPTS} failed starts in {took:.1f} s")


def test_burst_gives_up_at_the_first_failed_start(start_workers):
    workers = start_workers("--burst", database_url=_missing_database_url())
    code = workers.process.wait(60)
    log = workers.log()
    assert code != 0
    assert "could not start (1 attempt(s) in a row" in log
    assert log.count("Started worker process") == 1, log  # never started again


@pytest.mark.django_independent
def test_a_burst_gives_up_waiting_for_postgresql_after_max_wait(start_workers):
    """Nothing listens on PostgreSQL's port: a burst waits --max-wait seconds, not for ever,
    then exits non-zero saying why, once."""
    nowhere = harness.test_database_url().replace(
        f":{connection.settings_dict['PORT']}/", f":{free_port()}/"
    )
    started = time.monotonic()
    workers = start_workers("--burst", "--max-wait", "3", database_url=nowhere)
    code = workers.process.wait(60)
    took = time.monotonic() - started
    log = workers.log()
    assert code == 1, log
    assert 3 <= took < 30, f"--burst --max-wait 3 took {took:.1f} s to give up"
    reason = "PostgreSQL has not answered for 3 s: the burst gives up (--max-wait 3)."
    assert log.count(reason) == 2, log  # logged by the worker, shown by the supervisor
    assert "Worker process 0 could not start:\n" + reason in log
    assert log.count("PostgreSQL: cannot connect (") == 1  # one line for all its attempts
    assert "Traceback" not in log


def test_max_wait_is_for_bursts():
    with pytest.raises(CommandError, match="--max-wait applies to --burst only"):
        call_command("runworkers", "--max-wait", "5")
    with pytest.raises(CommandError, match="is not a number above 0"):
        call_command("runworkers", "--burst", "--max-wait", "0")


def test_settings_that_fail_in_spawned_workers_end_runworkers_with_the_import_error(
    start_workers,
):
    """Spawned children load the settings anew (forked ones inherit the supervisor's)."""
    workers = start_workers(
        "--processes",
        "2",
        "--start-method",
        "spawn",
        env={"DJANGO_SETTINGS_MODULE": "tests.support.settings.broken_in_workers"},
    )
    code = workers.process.wait(GIVE_UP_WITHIN_SECONDS)
    log = workers.log()
    assert code != 0
    assert log.count("ModuleNotFoundError: No module named 'tests.no_such_module'") == 1, log


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_workers_started_either_way_run_jobs(start_workers, start_method):
    job_id = add.enqueue(2, 3).id
    workers = start_workers("--burst", "--processes", "2", "--start-method", start_method)
    assert workers.process.wait(60) == 0, workers.log()
    assert Job.objects.get(pk=job_id).status == "succeeded"


def test_a_forked_worker_gets_none_of_the_supervisors_connection_pools(start_workers):
    """With Django's connection pool, the supervisor opens one when a worker dies (it marks
    the worker dead and ends its leases); it closes it before forking the next."""
    workers = start_workers(
        "--processes", "1", env={"DJANGO_SETTINGS_MODULE": "tests.support.settings.pool"}
    )
    [first] = workers.wait_for_children(1)
    ran = add.enqueue(1, 1).id  # the worker has started once it ran this
    wait_until(lambda: Job.objects.get(pk=ran).status == "succeeded", 30, "a first job to run")
    os.kill(first, signal.SIGKILL)
    wait_until(lambda: workers.children() not in ([], [first]), 30, "the worker process restarted")
    wait_until(lambda: "Worker process 0 died" in workers.log(), 10, "the death logged")
    job_id = pools_found.enqueue().id
    wait_until(lambda: Job.objects.get(pk=job_id).status == "succeeded", 30, "the probe job to run")
    assert pools_found.get_result(job_id).return_value == [], workers.log()


def test_a_manage_py_without_the_main_guard_runs_workers(tmp_path):
    """multiprocessing's spawn re-imports the parent's script in every child; a manage.py that
    calls execute_from_command_line unguarded used to start runworkers again in each worker."""
    (tmp_path / "manage.py").write_text(
        "import os\n"
        "import sys\n\n"
        'os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.support.settings")\n'
        "from django.core.management import execute_from_command_line\n\n"
        "execute_from_command_line(sys.argv)\n"
    )
    job_id = add.enqueue(2, 3).id
    env = {
        **os.environ,
        "PYTHONPATH": str(harness.ROOT),
        "DATABASE_URL": harness.test_database_url(),
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run(
        # Spawned workers are what re-import the script (a fork does not).
        [
            sys.executable,
            "manage.py",
            "runworkers",
            "--burst",
            "--processes",
            "2",
            "--start-method",
            "spawn",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    job = Job.objects.get(pk=job_id)
    assert (job.status, job.result) == ("succeeded", 5)
