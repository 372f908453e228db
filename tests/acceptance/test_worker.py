"""The worker as its users meet it: retries, timeouts, cancellation, bad jobs, bad signals."""

from datetime import timedelta

import pytest
from django.db import connection

from django_leasequeue.models import Job
from tests.acceptance import harness
from tests.acceptance.harness import wait_until
from tests.support.tasks.basic import (
    add,
    async_sleep,
    enqueues_a_backdated_job,
    flaky,
    reports_progress,
    resumes_from_checkpoint,
    returns_a_set,
    too_slow,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]


def db_now():
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        return cursor.fetchone()[0]


def run_burst(start_workers, *args: str) -> str:
    workers = start_workers("--burst", "--queues", "*", *args)
    assert workers.process.wait(60) == 0, workers.log()
    return workers.log()


def test_burst_runs_sync_and_async_tasks_and_exits(start_workers):
    ids = [add.enqueue(i, 1).id for i in range(20)] + [async_sleep.enqueue(0.01).id]
    log = run_burst(start_workers, "--processes", "2")
    jobs = Job.objects.filter(pk__in=ids)
    assert {job.status for job in jobs} == {"succeeded"}
    assert sorted(job.result for job in jobs if job.task_path.endswith("add"))[:3] == [1, 2, 3]
    assert "Burst: nothing due is left" in log


def test_a_burst_runs_a_job_enqueued_behind_where_its_polls_have_reached(start_workers, backend):
    """Polls start at the last full poll's last job (runtime/poll_bound.py). A job enqueued
    mid-burst due an hour ago sorts before that, and the burst still runs it before it ends
    (the fairness probe, which would find it too, is kept out for the run)."""
    first = enqueues_a_backdated_job.enqueue(7)
    backend.enqueue_many([(add, (n, n), {}) for n in range(300)])
    workers = start_workers(
        "--burst", "--processes", "1", "--concurrency", "4", options={"oldest_first_seconds": 3600}
    )
    assert workers.process.wait(60) == 0, workers.log()
    first.refresh()
    backdated = Job.objects.get(pk=first.return_value)
    assert backdated.run_after < first.enqueued_at
    assert (backdated.status, backdated.result) == ("succeeded", 14)
    assert Job.objects.exclude(status="succeeded").count() == 0


def test_failures_retry_with_backoff_then_fail_keeping_every_error(start_workers):
    job_id = flaky.enqueue(5).id  # max_attempts=2, backoff 0.5s
    workers = start_workers()
    wait_until(lambda: Job.objects.get(pk=job_id).status == "failed", 20, "failure")
    workers.stop()
    job = Job.objects.get(pk=job_id)
    assert [e["message"] for e in job.errors] == ["flaky 5", "flaky 5"]
    assert all("ValueError: flaky 5" in e["traceback"] for e in job.errors)
    assert job.attempt == 2


def test_timeout_fails_the_attempt(start_workers):
    job_id = too_slow.enqueue().id
    start_workers()
    wait_until(lambda: Job.objects.get(pk=job_id).status == "failed", 20, "timeouts")
    errors = Job.objects.get(pk=job_id).errors
    assert [e["exception_class_path"] for e in errors] == [
        "django_leasequeue.exceptions.JobTimeout"
    ] * 2
    assert "timeout of 0.3s" in errors[0]["message"]


def test_cancel_of_a_running_job_stops_it_at_the_next_heartbeat(start_workers, backend):
    job_id = async_sleep.enqueue(30).id
    start_workers()
    wait_until(lambda: Job.objects.get(pk=job_id).status == "running", 20, "running")
    asked_at = db_now()
    assert backend.cancel([job_id]) == {Job.objects.get().id: "cancel_requested"}
    wait_until(lambda: Job.objects.get(pk=job_id).status == "cancelled", 30, "cancelled")
    job = Job.objects.get(pk=job_id)
    # Stopped, not left to end its 30 s sleep: at a heartbeat (0.3 s apart) after the request,
    # by the database's clock; the rest of the 10 s is a loaded machine's margin.
    assert job.finished_at - asked_at < timedelta(seconds=10), job.finished_at - asked_at


def test_bad_jobs_fail_with_a_clear_reason_and_the_worker_goes_on(start_workers, backend):
    missing = Job.objects.create(
        task_path="tests.support.tasks.basic.no_such_task", args=[], kwargs={}
    )
    not_a_task = Job.objects.create(
        task_path="tests.support.tasks.basic.not_a_task", args=[], kwargs={}
    )
    # add(a, b), with one argument: enqueue refuses it, so the row is written directly.
    mismatch = str(
        Job.objects.create(task_path="tests.support.tasks.basic.add", args=[1], kwargs={}).id
    )
    bad_return = returns_a_set.enqueue().id
    good = add.enqueue(2, 2).id
    run_burst(start_workers)
    jobs = {str(job.id): job for job in Job.objects.all()}
    for job_id, text in [
        (str(missing.id), "cannot be imported"),
        (str(not_a_task.id), "is a int, not a Task"),
        (
            mismatch,
            "Arguments do not match tests.support.tasks.basic.add: "
            "missing a required argument: 'b'",
        ),
        (bad_return, "return value: an object of type set, which is not JSON"),
    ]:
        job = jobs[job_id]
        assert job.status == "failed" and job.attempt == 1, job
        assert text in job.errors[0]["message"]
    assert jobs[good].status == "succeeded" and jobs[good].result == 4


def test_garbage_in_redis_is_logged_and_dropped(start_workers, backend, redis_client):
    redis_client.rpush(
        f"{backend.config.key_prefix}:wakeups:default", "not-a-uuid", b"\xff\xfe", ""
    )
    workers = start_workers()
    good = add.enqueue(20, 22).id
    wait_until(lambda: Job.objects.get(pk=good).status == "succeeded", 20, "the good job")
    # The good job may be claimed by a poll before the garbage is popped: wait for the drop.
    dropped = "Dropped 1 wakeup(s) that are not job ids"
    wait_until(lambda: dropped in workers.log(), 20, "the garbage to be dropped")
    assert workers.log().count(dropped) == 1  # one line for the three items, not one each
    assert workers.process.poll() is None


@pytest.mark.django_db(transaction=True, databases=["default", "jobs"])
def test_a_worker_popping_another_project_s_wakeups_says_so_once_naming_key_prefix(
    start_workers, backend, redis_client, settings
):
    """Two projects, each with its own job database, share one Redis database and key prefix.
    A wakeup for a job of the worker's own database that is already done is harmless and
    says nothing; one for a job its database does not have at all is the other project's: a
    warning naming ``key_prefix``, once (rate limited), and the other project's job is still
    run, by its own worker's poll."""
    ours = start_workers()  # project A: the test database
    own = add.enqueue(1, 1).id
    wait_until(lambda: Job.objects.get(pk=own).status == "succeeded", 20, "project A's job")
    wakeups = f"{backend.config.key_prefix}:wakeups:default"
    redis_client.rpush(wakeups, own)  # a duplicate wakeup of a finished job
    wait_until(lambda: redis_client.llen(wakeups) == 0, 10, "the duplicate popped")

    default = settings.TASKS["default"]
    settings.TASKS = {"default": {**default, "OPTIONS": {**default["OPTIONS"], "database": "jobs"}}}
    theirs = [add.enqueue(2, 2).id]  # project B: the other database, the same Redis keys
    warning = "does not have"
    wait_until(lambda: warning in ours.log(), 20, "project A to warn about B's wakeup")
    theirs.append(add.enqueue(3, 3).id)
    wait_until(lambda: redis_client.llen(wakeups) == 0, 10, "B's second wakeup popped by A")
    [line] = [line for line in ours.log().splitlines() if warning in line]
    assert " WARNING " in line and "Popped wakeups for 1 job(s) that database 'default'" in line
    assert f"(latest: {theirs[0]})" in line
    assert f"key prefix {backend.config.key_prefix!r}" in line and "['key_prefix']" in line
    assert str(own) not in line

    start_workers(database_url=harness.test_database_url("jobs"))  # project B's worker
    done = Job.objects.using("jobs").filter(pk__in=theirs, status="succeeded")
    wait_until(lambda: done.count() == 2, 20, "project B's jobs, found by polling")
    assert ours.log().count(warning) == 1


def test_a_retry_resumes_from_the_checkpoint(start_workers):
    job_id = resumes_from_checkpoint.enqueue().id
    start_workers()
    wait_until(lambda: Job.objects.get(pk=job_id).status == "succeeded", 20, "the retry")
    assert Job.objects.get(pk=job_id).result == {"attempt": 2, "resumed_from": {"step": 1}}


def test_progress_is_persisted_and_the_last_update_always_lands(start_workers):
    job_id = reports_progress.enqueue(500).id
    run_burst(start_workers)
    job = Job.objects.get(pk=job_id)
    assert job.status == "succeeded"
    assert (job.progress["current"], job.progress["total"], job.progress["message"]) == (
        500,
        500,
        "step 500",
    )


def test_django_task_signals_fire_in_the_worker(start_workers):
    # The worker runs in another process: prove the signals fired through Django's logging,
    # which logs each job at -v 2 (at -v 1 those two lines a job would flood the log).
    job_id = add.enqueue(1, 2).id
    log = run_burst(start_workers, "-v", "2")
    assert f"Task id={job_id} path=tests.support.tasks.basic.add state=RUNNING" in log
    assert f"Task id={job_id} path=tests.support.tasks.basic.add state=SUCCESSFUL" in log
    quiet = add.enqueue(3, 4).id
    log = run_burst(start_workers)
    assert f"Task id={quiet}" not in log and "Burst: nothing due is left" in log


def test_runworkers_names_the_queues_it_does_not_serve_and_what_burst_leaves(start_workers):
    waiting = add.using(queue_name="other").enqueue(1, 1).id
    served = add.enqueue(2, 2).id
    workers = start_workers("--burst", "--queues", "default")
    assert workers.process.wait(60) == 0
    log = workers.log()
    assert "not serving the declared queue(s) high, llm, low, other" in log
    assert "1 due job(s) wait in queues this worker does not serve: other (1)" in log
    assert Job.objects.get(pk=served).status == "succeeded"
    assert Job.objects.get(pk=waiting).status == "queued"
