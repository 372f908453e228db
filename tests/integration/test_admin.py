"""The job admin through Django's test client: list, summary, filters, actions, permissions, races.

Real PostgreSQL and Redis; actions race real protocol statements in other threads.
"""

import json
import re
import threading
import time
from uuid import UUID

import pytest
from django.contrib.admin.models import LogEntry
from django.db import connection, transaction
from django.db.models import BooleanField
from django.db.models.expressions import RawSQL
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from django_leasequeue.admin.pagination import EstimatedCountPaginator
from django_leasequeue.ids import uuid7
from django_leasequeue.models import Job
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql import operator_actions as operator_actions_sql
from django_leasequeue.sql.executor import execute
from tests.support.helpers import claim_one, run_in_threads, snapshot
from tests.support.tasks.basic import add, quick_retry, report

pytestmark = pytest.mark.django_db(transaction=True)

CHANGELIST = reverse("admin:leasequeue_job_changelist")


def change_url(job_id) -> str:
    return reverse("admin:leasequeue_job_change", args=[job_id])


def action_url(job_id, name: str) -> str:
    return reverse("admin:leasequeue_job_action", args=[job_id, name])


def _fail(lease, *, retryable: bool = False, message: str = "boom"):
    return execute(
        jobs_sql.fail(
            lease,
            exception_class_path="builtins.ValueError",
            message=message,
            traceback=f'Traceback (most recent call last):\n  File "x.py"\nValueError: {message}\n',
            retryable=retryable,
            backoff_cap_seconds=60,
        )
    )


def failed_job(*args, worker: str = "w-fail") -> UUID:
    claimed = claim_one(quick_retry.enqueue(*(args or (0,))).id, worker)
    assert _fail(claimed.lease).status == "failed"
    return claimed.id


def succeeded_job() -> UUID:
    claimed = claim_one(add.enqueue(1, 2).id, "w-ok")
    assert execute(jobs_sql.complete(claimed.lease, {"sum": 3})) is True
    return claimed.id


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def run_action(client: Client, name: str, ids, **extra) -> list[str]:
    """Post a changelist action (confirmed) and return the messages it left."""
    data = {"action": name, "index": 0, "_selected_action": [str(i) for i in ids], **extra}
    response = client.post(CHANGELIST, data, follow=True)
    assert response.status_code == 200
    return messages_of(response)


# The list


def test_changelist_shows_lease_state_progress_and_queue_summary(admin_client, backend):
    queued = add.enqueue(1, 2).id
    running = claim_one(add.using(queue_name="high").enqueue(3, 4).id, "host-1:42")
    execute(jobs_sql.progress(running.lease, 3, 4, "copying"))
    failed = failed_job(5)
    expired = claim_one(add.enqueue(5, 6).id, "host-2:7", lease_seconds=0.05)
    time.sleep(0.1)

    response = admin_client.get(CHANGELIST)
    assert response.status_code == 200
    html = response.content.decode()
    for job_id in (queued, running.id, failed, expired.id):
        assert str(job_id)[-8:] in html
    assert "host-1:42" in html and "1 / 3" in html
    assert (
        'value="75"' in html
        and '75% · <span class="lq-clip lq-progress-message" title="copying">copying</span>' in html
    )
    assert re.search(r"\d+ s left", html)
    assert "will be recovered" in html
    assert "✖</span> Failed" in html  # the symbol and the word, not colour alone

    summary = {row["queue_name"]: row for row in response.context["summary"]}
    assert (summary["default"]["queued"], summary["default"]["running"]) == (1, 1)
    assert (summary["default"]["failed"], summary["high"]["running"]) == (1, 1)
    assert summary["default"]["finished_last_minute"] == 1
    assert summary["default"]["oldest_due"] != "—"
    # Every declared queue (the QUEUES of tests/support/settings/__init__.py) has its row, at
    # zero without jobs.
    assert set(summary) == {"default", "high", "low", "other", "llm"}
    other = summary["other"]
    assert [other[n] for n in ("queued", "running", "retrying", "failed")] == [0, 0, 0, 0]
    assert (other["oldest_due"], other["finished_last_minute"]) == ("—", 0)
    assert '<a href="?queue=other">other</a>' in html
    assert response.context["cl"].result_count == 4


def test_large_table_is_listed_without_counting_it(admin_client):
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO leasequeue_job (id, task_path, args, kwargs, status, finished_at) "
            "SELECT gen_random_uuid(), 'tests.support.tasks.basic.add', '[]', '{}', 'succeeded', "
            "now() "
            "FROM generate_series(1, 12000)"
        )
        cursor.execute("ANALYZE leasequeue_job")
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(CHANGELIST)
    assert response.status_code == 200
    assert "about 1" in response.content.decode()  # e.g. "about 12000 jobs"
    assert response.context["cl"].paginator.estimated
    assert not [q for q in queries.captured_queries if '"__count"' in q["sql"]]


def test_filters_and_search(admin_client, redis_client):
    failed = failed_job(1, worker="host-9:1")
    fresh = claim_one(add.enqueue(2, 3).id, "host-3:3")
    expired = claim_one(add.enqueue(4, 5).id, "host-4:4", lease_seconds=0.05)
    keyed = report.enqueue(77).id
    time.sleep(0.1)

    def listed(query: str) -> set[str]:
        response = admin_client.get(CHANGELIST + query)
        assert response.status_code == 200
        return {str(job.pk) for job in response.context["cl"].result_list}

    assert listed("?lease=expired") == {str(expired.id)}
    assert listed("?lease=held") == {str(fresh.id)}
    assert listed("?failed_within=1h") == {str(failed)}
    assert listed("?status__exact=failed") == {str(failed)}
    assert listed("?task=tests.support.tasks.basic.report") == {str(keyed)}
    assert listed(f"?q={failed}") == {str(failed)}
    assert listed("?q=report:77") == {str(keyed)}
    assert listed("?q=host-3:3") == {str(fresh.id)}
    assert listed("?q=quick_retry") == {str(failed)}
    assert len(listed("?queue=default")) == 4 and listed("?queue=high") == set()

    response = admin_client.get(CHANGELIST)
    task_choices = {
        choice["display"]
        for spec in response.context["cl"].filter_specs
        if spec.title == "task"
        for choice in spec.choices(response.context["cl"])
    }
    assert {
        "tests.support.tasks.basic.add",
        "tests.support.tasks.basic.quick_retry",
        "tests.support.tasks.basic.report",
    } <= task_choices


# Actions from the list


def test_retry_requeues_failed_jobs_keeps_errors_and_signals_workers(
    admin_client, backend, redis_client
):
    failed = failed_job(1)
    running = claim_one(add.enqueue(1, 1).id, "w-busy").id
    done = succeeded_job()
    redis_client.delete(backend.wakeups.key("default"))

    messages = run_action(admin_client, "retry_jobs", [failed, running, done])

    assert messages == ["1 job retried; 2 skipped: already succeeded (1), still running (1)"]
    job = snapshot(failed)
    assert (job["status"], job["attempt"], job["worker_id"]) == ("queued", 0, None)
    assert (job["started_at"], job["finished_at"], job["result"]) == (None, None, None)
    assert job["worker_ids"] == ["w-fail"]  # who ran it before stays known
    assert [error["message"] for error in job["errors"]] == ["boom"]
    assert redis_client.lrange(backend.wakeups.key("default"), 0, -1) == [str(failed).encode()]
    assert snapshot(running)["status"] == "running" and snapshot(done)["status"] == "succeeded"
    # A fresh set of attempts: the worker can claim it again.
    assert claim_one(failed, "w-again").attempt == 1


def test_retry_skips_a_job_whose_unique_key_an_unfinished_job_holds(admin_client):
    first = claim_one(report.enqueue(5).id, "w")
    execute(operator_actions_sql.cancel([first.id]))
    assert execute(jobs_sql.finish_cancelled(first.lease)) is True
    holder = report.enqueue(5).id  # the key is free again: a new job takes it

    messages = run_action(admin_client, "retry_jobs", [first.id])

    assert messages == ["no job changed; 1 skipped: an unfinished job holds its unique key"]
    assert snapshot(first.id)["status"] == "cancelled" and snapshot(holder)["status"] == "queued"


def test_cancel_asks_for_confirmation_then_cancels_or_requests(admin_client):
    queued = add.enqueue(1, 2).id
    running = claim_one(add.enqueue(3, 4).id, "w-run")
    done = succeeded_job()
    ids = [queued, running.id, done]

    confirm = admin_client.post(
        CHANGELIST,
        {"action": "cancel_jobs", "index": 0, "_selected_action": [str(i) for i in ids]},
    )
    assert confirm.status_code == 200
    assert "are you sure" in confirm.content.decode()
    assert "2 of them can be changed" in confirm.content.decode()
    assert snapshot(queued)["status"] == "queued"  # nothing happened yet

    messages = run_action(admin_client, "cancel_jobs", ids, post="yes")

    assert messages == ["1 job asked to cancel, 1 job cancelled; 1 skipped: already succeeded"]
    assert snapshot(queued)["status"] == "cancelled"
    job = snapshot(running.id)
    assert (job["status"], job["cancel_requested"]) == ("running", True)
    reply = execute(jobs_sql.heartbeat([running.lease], lease_seconds=30))
    assert reply.cancel_requested == {running.id}
    assert execute(jobs_sql.finish_cancelled(running.lease)) is True


def test_release_takes_the_job_from_its_worker_and_fences_it_out(
    admin_client, backend, redis_client
):
    held = claim_one(add.enqueue(1, 2).id, "dead-worker")
    queued = add.enqueue(3, 4).id
    redis_client.delete(backend.wakeups.key("default"))

    messages = run_action(admin_client, "release_jobs", [held.id, queued], post="yes")

    assert messages == ["1 job released; 1 skipped: not running"]
    job = snapshot(held.id)
    assert (job["status"], job["attempt"], job["lease_version"]) == ("retrying", 0, 2)
    assert redis_client.lrange(backend.wakeups.key("default"), 0, -1) == [str(held.id).encode()]
    # The old worker wakes up: every write it tries is dropped.
    assert execute(jobs_sql.complete(held.lease, "late")) is False
    assert execute(jobs_sql.heartbeat([held.lease], lease_seconds=30)).held == set()
    assert claim_one(held.id, "w-new").attempt == 1


def test_release_of_a_job_with_a_cancel_request_cancels_it(admin_client):
    held = claim_one(add.enqueue(1, 2).id, "dead-worker")
    execute(operator_actions_sql.cancel([held.id]))

    messages = run_action(admin_client, "release_jobs", [held.id], post="yes")

    assert messages == ["1 job cancelled (cancel requested)"]
    assert snapshot(held.id)["status"] == "cancelled"


def test_delete_removes_jobs_but_not_running_ones(admin_client):
    failed = failed_job(1)
    running = claim_one(add.enqueue(1, 1).id, "w").id

    confirm = admin_client.post(
        CHANGELIST, {"action": "delete_jobs", "index": 0, "_selected_action": [failed, running]}
    )
    assert "deleted for good" in confirm.content.decode()
    messages = run_action(admin_client, "delete_jobs", [failed, running], post="yes")

    assert messages == ["1 job deleted; 1 skipped: running: cancel it or release its lease first"]
    assert list(Job.objects.values_list("pk", flat=True)) == [running]


def test_select_across_applies_to_the_whole_filtered_list(admin_client):
    failed = {failed_job(i) for i in range(3)}
    other = add.enqueue(1, 1).id
    # The "select all" link: one ticked box on the page plus select_across, under a filter.
    data = {"action": "cancel_jobs", "index": 0, "select_across": "1", "_selected_action": other}

    confirm = admin_client.post(CHANGELIST + "?status__exact=queued", data)
    assert 'name="select_across" value="1"' in confirm.content.decode()
    response = admin_client.post(
        CHANGELIST + "?status__exact=queued", {**data, "post": "yes"}, follow=True
    )
    assert messages_of(response) == ["1 job cancelled"]
    assert snapshot(other)["status"] == "cancelled"

    response = admin_client.post(
        CHANGELIST + "?status__exact=failed",
        {**data, "action": "retry_jobs", "_selected_action": next(iter(failed))},
        follow=True,
    )

    assert messages_of(response) == ["3 jobs retried"]
    assert {job.pk for job in Job.objects.filter(status="queued")} == failed


# The detail page and its buttons


def test_detail_page_shows_json_errors_lease_and_buttons(admin_client):
    claimed = claim_one(quick_retry.enqueue({"n": 1, "tags": ["a"]}).id, "w1")
    execute(jobs_sql.checkpoint(claimed.lease, '{"step": 2}'))
    _fail(claimed.lease, retryable=True, message="first")
    job = Job.objects.get(pk=claimed.id)
    Job.objects.filter(pk=job.pk).update(run_after=job.run_after.replace(year=2000))
    second = claim_one(claimed.id, "w2")
    _fail(second.lease, message="second")

    response = admin_client.get(change_url(claimed.id))
    html = response.content.decode()
    assert response.status_code == 200
    assert "&quot;tags&quot;: [\n" in html  # indented JSON
    assert "&quot;step&quot;: 2" in html
    assert "Attempt 2 — <code>builtins.ValueError</code>: second" in html
    assert "Attempt 1 — <code>builtins.ValueError</code>: first" in html
    assert "ValueError: first" in html and "ValueError: second" in html
    assert action_url(claimed.id, "retry") in html
    assert action_url(claimed.id, "cancel") not in html  # not applicable to a failed job
    assert 'name="_save"' not in html  # read-only: nothing to save


def test_detail_buttons_run_one_action_with_confirmation_where_destructive(admin_client):
    failed = failed_job(1)
    assert admin_client.get(action_url(failed, "retry")).status_code == 405  # POST only

    response = admin_client.post(action_url(failed, "retry"), follow=True)
    assert response.redirect_chain[-1][0] == change_url(failed)
    assert messages_of(response) == ["1 job retried"]
    assert snapshot(failed)["status"] == "queued"

    confirm = admin_client.get(action_url(failed, "cancel"))
    assert confirm.status_code == 200 and "are you sure" in confirm.content.decode()
    assert snapshot(failed)["status"] == "queued"
    response = admin_client.post(action_url(failed, "cancel"), follow=True)
    assert messages_of(response) == ["1 job cancelled"]
    assert snapshot(failed)["status"] == "cancelled"

    assert admin_client.post(action_url(failed, "explode")).status_code == 404
    assert admin_client.post(action_url("not-a-uuid", "retry")).status_code == 404
    assert admin_client.post(action_url(uuid7(), "retry")).status_code == 404


def test_saving_the_change_form_is_refused(admin_client):
    failed = failed_job(1)
    before = snapshot(failed)
    response = admin_client.post(change_url(failed), {"status": "succeeded"})
    assert response.status_code == 405
    assert snapshot(failed) == before


def test_deleting_from_the_detail_page_goes_through_the_protocol(admin_client):
    failed = failed_job(1)
    running = claim_one(add.enqueue(1, 1).id, "w").id
    delete_url = reverse("admin:leasequeue_job_delete", args=[failed])

    response = admin_client.post(delete_url, {"post": "yes"}, follow=True)
    assert messages_of(response) == ["1 job deleted"]
    assert not Job.objects.filter(pk=failed).exists()
    running_delete = reverse("admin:leasequeue_job_delete", args=[running])
    assert admin_client.post(running_delete, {"post": "yes"}).status_code == 403
    assert Job.objects.filter(pk=running).exists()


# Permissions


def test_view_only_staff_sees_everything_and_changes_nothing(staff_client):
    client = staff_client("view_job")
    failed = failed_job(1)
    running = claim_one(add.enqueue(1, 1).id, "w").id
    before = {job_id: snapshot(job_id) for job_id in (failed, running)}

    listing = client.get(CHANGELIST)
    assert listing.status_code == 200 and str(failed)[-8:] in listing.content.decode()
    assert "summary" in listing.context and 'name="action"' not in listing.content.decode()
    detail = client.get(change_url(failed))
    assert detail.status_code == 200 and "ValueError: boom" in detail.content.decode()
    assert action_url(failed, "retry") not in detail.content.decode()

    for name in ("retry_jobs", "cancel_jobs", "release_jobs", "delete_jobs"):
        response = client.post(
            CHANGELIST,
            {"action": name, "index": 0, "post": "yes", "_selected_action": [failed, running]},
            follow=True,
        )
        assert messages_of(response) == []  # no action is offered, so none runs
    for job_id, name in [(failed, "retry"), (running, "cancel"), (running, "release")]:
        assert client.post(action_url(job_id, name)).status_code == 403
        assert client.get(action_url(job_id, name)).status_code in (403, 405)
    assert client.post(reverse("admin:leasequeue_job_delete", args=[failed])).status_code == 403
    assert client.post(change_url(failed), {}).status_code == 405
    assert {job_id: snapshot(job_id) for job_id in (failed, running)} == before


def test_change_without_delete_permission_offers_no_delete(staff_client):
    client = staff_client("view_job", "change_job")
    failed = failed_job(1)
    actions = client.get(CHANGELIST).context["action_form"].fields["action"].choices
    assert [name for name, _label in actions if name] == [
        "retry_jobs",
        "cancel_jobs",
        "release_jobs",
    ]
    assert run_action(client, "delete_jobs", [failed], post="yes") == ["No action selected."]
    assert run_action(client, "retry_jobs", [failed]) == ["1 job retried"]


def test_non_staff_are_sent_to_the_login_page(django_user_model):
    user = django_user_model.objects.create_user("visitor", password="pw")
    client = Client()
    client.force_login(user)
    failed = failed_job(1)
    for response in (
        client.get(CHANGELIST),
        client.get(change_url(failed)),
        client.post(action_url(failed, "retry")),
        client.post(CHANGELIST, {"action": "retry_jobs", "index": 0, "_selected_action": [failed]}),
    ):
        assert response.status_code == 302 and "/login/" in response["Location"]
    assert snapshot(failed)["status"] == "failed"


# Races with workers


def _admin_in_thread(django_user_model) -> Client:
    user = django_user_model.objects.filter(is_superuser=True).first()
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("round_", range(8))
def test_retry_racing_the_worker_failing_the_job_ends_consistent(
    admin_client, django_user_model, round_
):
    claimed = claim_one(quick_retry.enqueue(round_).id, "w-racer")
    client = _admin_in_thread(django_user_model)

    def act(i: int):
        if i == 0:
            return _fail(claimed.lease, message="last attempt")
        return run_action(client, "retry_jobs", [claimed.id])

    outcome, messages = run_in_threads(2, act)

    assert outcome is not None and outcome.status == "failed"  # the worker's write always lands
    job = snapshot(claimed.id)
    assert [error["message"] for error in job["errors"]] == ["last attempt"]
    if messages == ["1 job retried"]:  # retry came second: the failed job is queued again
        assert (job["status"], job["attempt"], job["finished_at"]) == ("queued", 0, None)
    else:  # retry came first and found it running
        assert messages == ["no job changed; 1 skipped: still running"]
        assert job["status"] == "failed" and job["finished_at"] is not None


@pytest.mark.parametrize("round_", range(8))
def test_retry_racing_the_worker_completing_the_job_never_undoes_success(
    admin_client, django_user_model, round_
):
    claimed = claim_one(add.enqueue(round_, 1).id, "w-racer")
    client = _admin_in_thread(django_user_model)

    def act(i: int):
        if i == 0:
            return execute(jobs_sql.complete(claimed.lease, round_ + 1))
        return run_action(client, "retry_jobs", [claimed.id])

    completed, messages = run_in_threads(2, act)

    assert completed is True
    assert messages in (
        ["no job changed; 1 skipped: still running"],
        ["no job changed; 1 skipped: already succeeded"],
    )
    job = snapshot(claimed.id)
    assert (job["status"], job["result"]) == ("succeeded", round_ + 1)


@pytest.mark.parametrize("round_", range(8))
def test_release_racing_the_worker_completing_exactly_one_wins(
    admin_client, django_user_model, round_
):
    claimed = claim_one(add.enqueue(round_, 2).id, "w-racer")
    client = _admin_in_thread(django_user_model)

    def act(i: int):
        if i == 0:
            return execute(jobs_sql.complete(claimed.lease, "done"))
        return run_action(client, "release_jobs", [claimed.id], post="yes")

    completed, messages = run_in_threads(2, act)

    job = snapshot(claimed.id)
    if completed:
        assert messages == ["no job changed; 1 skipped: already succeeded"]
        assert (job["status"], job["result"]) == ("succeeded", "done")
    else:
        assert messages == ["1 job released"]
        assert (job["status"], job["result"], job["lease_version"]) == ("retrying", None, 2)


def test_cancel_racing_the_worker_completing_ends_in_one_terminal_state(
    admin_client, django_user_model
):
    for round_ in range(8):
        claimed = claim_one(add.enqueue(round_, 3).id, "w-racer")
        client = _admin_in_thread(django_user_model)

        def act(i: int, claimed=claimed, client=client):
            if i == 0:
                return execute(jobs_sql.complete(claimed.lease, "ok"))
            return run_action(client, "cancel_jobs", [claimed.id], post="yes")

        completed, messages = run_in_threads(2, act)

        assert completed is True  # a cancel request never stops a completion already made
        job = snapshot(claimed.id)
        assert job["status"] == "succeeded"
        assert messages in (
            ["1 job asked to cancel"],
            ["no job changed; 1 skipped: already succeeded"],
        )
        assert job["cancel_requested"] is (messages == ["1 job asked to cancel"])


def test_retry_racing_an_enqueue_of_the_same_unique_key_skips_instead_of_erroring(
    admin_client, django_user_model
):
    first = claim_one(report.enqueue(9).id, "w")
    execute(operator_actions_sql.cancel([first.id]))
    execute(jobs_sql.finish_cancelled(first.lease))
    other = failed_job(1)
    inserted, committed = threading.Event(), threading.Event()
    client = _admin_in_thread(django_user_model)

    def act(i: int):
        if i == 0:  # a caller enqueues the same key; its transaction commits a moment later
            with transaction.atomic():
                holder = report.enqueue(9).id
                inserted.set()
                time.sleep(0.3)  # the retry statement now waits on this row's unique key
            committed.set()
            return holder
        inserted.wait(5)
        return run_action(client, "retry_jobs", [first.id, other])

    holder, messages = run_in_threads(2, act)

    assert committed.is_set()
    assert messages == ["1 job retried; 1 skipped: an unfinished job holds its unique key"]
    assert snapshot(first.id)["status"] == "cancelled"
    assert snapshot(holder)["status"] == "queued" and snapshot(other)["status"] == "queued"


def test_a_slow_exact_count_is_cancelled_and_estimated(admin_client):
    for i in range(60):
        add.enqueue(i, i)
    # Each row costs 20 ms to test: counting them all would take 1.2 s, many times the limit
    # (COUNT_TIME_LIMIT_MS).
    slow = Job.objects.alias(
        slow=RawSQL("pg_sleep(0.02) IS NOT NULL", [], output_field=BooleanField())
    ).filter(slow=True)

    started = time.monotonic()
    paginator = EstimatedCountPaginator(slow.order_by("-id"), 50)
    count = paginator.count

    # Estimated: PostgreSQL cancelled the exact count at the limit (its statement_timeout).
    assert paginator.estimated and count >= 1
    # Well before the exact count could have ended, with room for a loaded machine's pause.
    assert time.monotonic() - started < 60 * 0.02
    exact = EstimatedCountPaginator(Job.objects.order_by("-id"), 50)
    assert (exact.count, exact.estimated) == (60, False)


def test_actions_are_recorded_in_each_jobs_history(admin_client):
    failed = failed_job(1)
    running = claim_one(add.enqueue(1, 1).id, "w").id

    run_action(admin_client, "retry_jobs", [failed, running])
    admin_client.post(action_url(running, "release"))

    entries = LogEntry.objects.order_by("id")
    assert [(entry.object_id, entry.change_message) for entry in entries] == [
        (str(failed), "Retry"),
        (str(running), "Release lease"),
    ]
    history = admin_client.get(reverse("admin:leasequeue_job_history", args=[running]))
    assert "Release lease" in history.content.decode()


def test_detail_page_of_a_running_job_has_the_live_progress_bar(admin_client):
    running = claim_one(add.enqueue(1, 1).id, "w")
    execute(jobs_sql.progress(running.lease, 2, 8, "warming up"))
    html = admin_client.get(change_url(running.id)).content.decode()
    assert "data-leasequeue-progress" in html and "leasequeue/progress.js" in html
    assert reverse("leasequeue:job-status", args=[running.id]) in html
    assert 'aria-valuenow="25"' in html and "warming up" in html

    execute(jobs_sql.complete(running.lease, 2))
    html = admin_client.get(change_url(running.id)).content.decode()
    # A finished job's stored bar, at the live bar's percentage: done is 100%.
    assert (
        "data-leasequeue-progress" not in html
        and '100% · <span class="lq-clip lq-progress-message" title="warming up">warming up</span>'
        in html
    )


def test_the_admin_and_the_live_bar_floor_the_same_percentage(admin_client):
    running = claim_one(add.enqueue(1, 1).id, "w")
    execute(jobs_sql.progress(running.lease, 2, 3, "two thirds"))  # 66.67%
    html = admin_client.get(reverse("admin:leasequeue_job_changelist")).content.decode()
    assert (
        '66% · <span class="lq-clip lq-progress-message" title="two thirds">two thirds</span>'
        in html
        and "67%" not in html
    )


@pytest.mark.parametrize("parameter", ["status", "queue", "task", "q"])
def test_a_nul_byte_in_a_filter_value_is_a_400_not_a_500(admin_client, parameter):
    response = admin_client.get(CHANGELIST, {parameter: "fail\x00ed"})
    assert response.status_code == 400


@pytest.mark.parametrize(
    "lookup", ["args__icontains", "kwargs__has_key", "result__contains", "worker_ids__0"]
)
def test_lookups_the_list_does_not_offer_are_refused(admin_client, lookup):
    add.enqueue(1, 2)
    assert admin_client.get(CHANGELIST, {lookup: "x"}).status_code == 400


def test_the_offered_filters_still_work(admin_client):
    failed = failed_job()
    response = admin_client.get(CHANGELIST, {"status__exact": "failed"})
    assert response.status_code == 200 and str(failed)[-8:] in response.content.decode()


def test_a_large_payload_shows_a_preview_and_downloads_whole(admin_client, settings):
    default = settings.TASKS["default"]
    settings.TASKS = {
        "default": {**default, "OPTIONS": {**default["OPTIONS"], "max_argument_bytes": None}}
    }
    big = "x" * 50_000
    job_id = add.enqueue(big, 1).id
    html = admin_client.get(change_url(job_id)).content.decode()
    assert "The first 10000 of 50007 bytes." in html
    assert big not in html and len(html) < 40_000 + 10_000
    download = reverse("admin:leasequeue_job_payload", args=[job_id, "args"])
    assert download in html
    response = admin_client.get(download)
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert json.loads(response.content) == [big, 1]
    assert (
        admin_client.get(
            reverse("admin:leasequeue_job_payload", args=[job_id, "errors"])
        ).status_code
        == 404
    )


def test_payload_downloads_need_the_view_permission(staff_client):
    job_id = add.enqueue(1, 2).id
    url = reverse("admin:leasequeue_job_payload", args=[job_id, "args"])
    assert staff_client().get(url).status_code == 403
    assert staff_client("view_job").get(url).status_code == 200


def test_the_confirmation_button_names_the_action(admin_client):
    job_id = add.enqueue(1, 2).id
    data = {"action": "cancel_jobs", "index": 0, "_selected_action": [job_id]}
    html = admin_client.post(CHANGELIST, data).content.decode()
    assert 'value="Yes, cancel"' in html


def test_the_list_offers_no_facet_counts(admin_client):
    """Facets would count every filter's choices over the whole table at each page load."""
    add.enqueue(1, 2)

    def queries_for(query: dict) -> int:
        with CaptureQueriesContext(connection) as queries:
            response = admin_client.get(CHANGELIST, query)
        assert response.status_code == 200 and response.context["cl"].add_facets is False
        return len(queries.captured_queries)

    assert queries_for({"_facets": "True"}) == queries_for({})
