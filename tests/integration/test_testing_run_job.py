"""``django_leasequeue.testing.run_job``: one call of a task run as a job, here and now."""

import pytest

from django_leasequeue import InvalidTaskArguments, JobTimeout, Snooze
from django_leasequeue.models import Job
from django_leasequeue.tasks_framework import InvalidTask
from django_leasequeue.testing import assert_enqueued, enqueued_jobs, run_job
from tests.support.models import Receipt
from tests.support.tasks import testing as tasks

pytestmark = pytest.mark.django_db


def test_it_returns_the_value_as_stored_through_json():
    assert run_job(tasks.returns, (1, "a")) == [1, "a"]
    assert run_job(tasks.pair, 1, "a") == [1, "a"]  # the task returned a tuple
    assert run_job(tasks.send_welcome, 3, locale="fr") == "welcome 3 (fr)"
    assert run_job(tasks.noop) is None


def test_the_job_stays_in_the_table_succeeded_and_is_not_enqueued():
    run_job(tasks.send_welcome, 3)
    job = Job.objects.get(task_path="tests.support.tasks.testing.send_welcome")
    assert (job.status, job.attempt, job.args) == ("succeeded", 1, [3])
    assert enqueued_jobs(tasks.send_welcome) == []


def test_bad_arguments_raise_what_enqueue_raises():
    for call in ((), (1, 2, 3)):
        with pytest.raises(InvalidTaskArguments) as by_run_job:
            run_job(tasks.send_welcome, *call)
        with pytest.raises(InvalidTaskArguments) as by_enqueue:
            tasks.send_welcome.enqueue(*call)
        assert str(by_run_job.value) == str(by_enqueue.value)
    unstorable = object()
    with pytest.raises(InvalidTaskArguments) as by_run_job:
        run_job(tasks.returns, unstorable)
    with pytest.raises(InvalidTaskArguments) as by_enqueue:
        tasks.returns.enqueue(unstorable)
    assert str(by_run_job.value) == str(by_enqueue.value)
    with pytest.raises(InvalidTask):
        run_job(tasks.send_welcome.using(queue_name="nowhere"), 1)
    assert not Job.objects.exists()


def test_its_exception_is_raised_as_is_once_with_no_retry():
    with pytest.raises(ValueError, match=r"^kaput$"):
        run_job(tasks.fails, "kaput")
    job = Job.objects.get()
    assert (job.status, job.attempt) == ("failed", 1)  # max_attempts=3, yet no retry
    assert Receipt.objects.filter(written_by="kaput").count() == 1


def test_the_task_gets_a_real_context():
    with pytest.raises(RuntimeError, match="first attempt fails"):
        run_job(tasks.works_with_context, 2)
    job = Job.objects.get()
    assert job.progress["current"] == 2 and job.progress["total"] == 2
    assert job.checkpoint == {"attempt": 1}


def test_a_timeout_and_a_snooze_are_raised():
    with pytest.raises(JobTimeout):
        run_job(tasks.outlives_its_timeout)
    with pytest.raises(Snooze):
        run_job(tasks.snoozes_once)
    assert_enqueued(tasks.snoozes_once)  # queued again, for five minutes from now


def test_it_runs_whatever_holds_the_tasks_limits_and_keys():
    tasks.capped.enqueue(1)
    assert run_job(tasks.capped, 2) == 2
    assert run_job(tasks.rate_limited, 1) == run_job(tasks.rate_limited, 1) == 1


def test_a_keyword_argument_may_be_called_task():
    assert run_job(tasks.takes_a_task_argument, task="mine") == "mine"
