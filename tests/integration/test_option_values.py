"""Bad values for the newest options, where a user gives them (issue 35): durations (one rule:
finite, positive, ending by the last day a job row holds), unique keys (strings, scoped to their
task) and queue names (the column's 100 characters, cut short in messages)."""

import io
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.test import override_settings

from django_leasequeue import InvalidTaskArguments, Snooze, operations, task
from django_leasequeue.backend import LeaseQueueBackend
from django_leasequeue.duration_rule import LATEST_MOMENT
from django_leasequeue.exceptions import InvalidDuration
from django_leasequeue.models import Job
from django_leasequeue.tasks_framework import InvalidTask
from tests.support.tasks import control as control_tasks
from tests.support.tasks.basic import add, report

pytestmark = pytest.mark.django_db

TOO_LONG = [10**15, 1e300, timedelta.max, 10**400]
NOT_FINITE = [float("inf"), float("nan"), float("-inf")]
NOT_A_DURATION = [True, "5", [1], None.__class__]
DURATION_OPTIONS = ["expires_after", "unique_for", "timeout", "backoff_seconds"]


def _using(option, value):
    keyed = {"unique_key": "k"} if option == "unique_for" else {}
    return add.using(**keyed, **{option: value})


@pytest.mark.parametrize("option", DURATION_OPTIONS)
@pytest.mark.parametrize("value", [*TOO_LONG, *NOT_FINITE, -1, 0, *NOT_A_DURATION])
def test_every_duration_option_refuses_what_no_row_can_hold_naming_it(option, value):
    with pytest.raises(InvalidDuration, match=rf"^{option} ") as refused:
        _using(option, value)
    assert isinstance(refused.value, InvalidTask) and len(str(refused.value)) < 300
    assert not Job.objects.exists()


@pytest.mark.parametrize("option", DURATION_OPTIONS)
def test_every_duration_option_takes_long_but_storable_durations(option):
    task = _using(option, timedelta(days=365 * 1000))
    result = task.enqueue(1, 2)
    job = Job.objects.get(pk=result.id)
    if option == "expires_after":
        assert job.expires_at - job.run_after == timedelta(days=365 * 1000)
    if option == "unique_for":
        # From the statement's now(); enqueued_at is the clock's a moment later.
        assert abs(job.unique_until - job.enqueued_at - timedelta(days=365 * 1000)).seconds < 1


def test_the_decorator_refuses_a_duration_too_long_naming_it():
    with pytest.raises(InvalidDuration, match=r"^expires_after is too long: 1e[+]15 seconds"):
        task(expires_after=10**15)(add.func)


def test_an_expiry_past_the_last_day_from_a_late_run_after_is_refused_at_enqueue():
    late = add.using(run_after=datetime(9999, 6, 1, tzinfo=UTC), expires_after=timedelta(days=365))
    with transaction.atomic():
        with pytest.raises(InvalidDuration, match=r"Cannot enqueue .*add: expires_after is too"):
            late.enqueue(1, 2)
        # Refused before any SQL: the caller's transaction goes on.
        assert not Job.objects.exists()
    with pytest.raises(InvalidTask, match="run_after 9999-12-31 is after 9999-12-30"):
        add.using(run_after=datetime(9999, 12, 31, tzinfo=UTC))
    assert add.using(run_after=datetime(9999, 6, 1, tzinfo=UTC)).enqueue(1, 2).id


@pytest.mark.parametrize("seconds", [*TOO_LONG, *NOT_FINITE, -1, *NOT_A_DURATION])
def test_snooze_refuses_what_no_row_can_hold(seconds):
    with pytest.raises(
        InvalidDuration, match=r"^A snooze takes a duration of 0 seconds or more: it "
    ) as refused:
        Snooze(seconds)
    assert isinstance(refused.value, ValueError)  # as before: a ValueError too


def test_snooze_takes_zero_and_long_storable_durations():
    assert Snooze(0).seconds == 0
    assert Snooze(timedelta(days=365 * 1000)).seconds == 365 * 1000 * 86400
    room = (LATEST_MOMENT - datetime.now(UTC)).total_seconds()
    with pytest.raises(InvalidDuration):
        Snooze(room + 86400)


@pytest.mark.parametrize("returned", [None, 5, ["a"], ("k",), 1.5, {"k": 1}])
def test_a_unique_key_callable_must_return_a_string(returned):
    with pytest.raises(InvalidTaskArguments, match="unique_key callable must return a string"):
        control_tasks.keyed_by_what_it_is_given.enqueue("x", returned=returned)
    assert not Job.objects.exists()


def test_a_unique_key_is_its_tasks_own():
    hello = control_tasks.keyed_hello.enqueue("ada")
    fetch = control_tasks.keyed_fetch.enqueue("ada")
    assert fetch.id != hello.id
    assert fetch.task.module_path.endswith("keyed_fetch")
    assert control_tasks.keyed_hello.enqueue("ada").id == hello.id
    assert control_tasks.keyed_fetch.enqueue("ada").id == fetch.id
    assert set(Job.objects.values_list("task_path", "unique_key")) == {
        (control_tasks.keyed_hello.module_path, "ada"),
        (control_tasks.keyed_fetch.module_path, "ada"),
    }


def test_in_one_batch_two_tasks_with_one_key_each_get_their_job(backend):
    results = backend.enqueue_many(
        [
            (control_tasks.keyed_hello, ("bob",), {}),
            (control_tasks.keyed_fetch, ("bob",), {}),
            (control_tasks.keyed_hello, ("bob",), {}),
        ]
    )
    assert results[0].id == results[2].id != results[1].id
    assert Job.objects.count() == 2


def test_a_key_held_for_a_period_is_its_tasks_own(backend):
    first = control_tasks.hourly_report.enqueue(1)
    other = add.using(unique_key="hourly-report", unique_for=timedelta(hours=1)).enqueue(1, 2)
    assert other.id != first.id
    assert control_tasks.hourly_report.enqueue(2).id == first.id


def test_an_operators_retry_is_held_back_only_by_a_job_of_the_same_task(backend):
    failed = report.enqueue(3)
    Job.objects.filter(pk=failed.id).update(status="failed")
    other_task = add.using(unique_key="report:3").enqueue(1, 2)  # the same key, another task
    operations.retry([failed.id], backend.config.database)
    assert Job.objects.get(pk=failed.id).status == "queued"
    assert Job.objects.get(pk=other_task.id).status == "queued"


def test_a_queue_name_too_long_is_refused_with_the_name_cut_short():
    name = "q" * 20_000
    with pytest.raises(InvalidTask, match="at most 100 characters") as refused:
        add.using(queue_name=name)
    assert len(str(refused.value)) < 400 and "(20000 characters)" in str(refused.value)
    with pytest.raises(InvalidTask) as unknown:
        add.using(queue_name="u" * 90)
    assert "is not valid for backend" in str(unknown.value) and "u" * 50 not in str(unknown.value)


def test_the_checks_refuse_a_queue_name_the_column_cannot_hold():
    tasks = {
        "default": {
            "BACKEND": "django_leasequeue.backend.LeaseQueueBackend",
            "QUEUES": ["default", "q" * 150],
        }
    }
    with override_settings(TASKS=tasks):
        messages = LeaseQueueBackend("default", tasks["default"]).check()
    [message] = [m for m in messages if m.id == "leasequeue.E008"]
    assert "at most 100 characters" in message.msg and "(150 characters)" in message.msg


def test_runworkers_refuses_a_queue_name_too_long():
    with pytest.raises(CommandError, match=r"--queues: Queue name .* at most 100 characters"):
        call_command("runworkers", "--queues", "q" * 150, stdout=io.StringIO())


def test_a_pause_refuses_a_long_name_cut_short(backend):
    with pytest.raises(ValueError, match="at most 100 characters") as refused:
        backend.pause_queue("q" * 20_000)
    assert len(str(refused.value)) < 300
    assert connection.is_usable()
