"""The failures page through Django's test client: groups by task and the last attempt's
exception class, its JSON, the group retry and delete (every job of the group, in batches, with
the list's messages and history), the link to a group's jobs, permissions and bad input.

Jobs fail through the worker's own ``fail`` statement, on the real PostgreSQL.
"""

import json
import re
from datetime import timedelta
from urllib.parse import parse_qs, urlparse

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.urls import reverse
from django.utils import timezone

from django_leasequeue import operations
from django_leasequeue.admin.failure_groups import GroupKey
from django_leasequeue.models import Job
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql import operator_actions as operator_actions_sql
from django_leasequeue.sql.executor import execute
from tests.support.helpers import claim_one
from tests.support.tasks.basic import add, quick_retry

pytestmark = pytest.mark.django_db(transaction=True)

FAILURES = reverse("admin:leasequeue_job_failures")
CHANGELIST = reverse("admin:leasequeue_job_changelist")


def fail_once(job_id, exception: str, message: str, *, retryable: bool = False) -> str:
    """One attempt of the job, ended by the worker's fail statement; returns the new status."""
    claimed = claim_one(job_id, "w-fail")
    outcome = execute(
        jobs_sql.fail(
            claimed.lease,
            exception_class_path=exception,
            message=message,
            traceback=f"Traceback (most recent call last):\n{exception}: {message}\n",
            retryable=retryable,
            backoff_cap_seconds=60,
        )
    )
    return outcome.status


def failed(task, exception: str, message: str = "boom", *args) -> str:
    job_id = task.enqueue(*(args or (1, 2))).id
    assert fail_once(job_id, exception, message) == "failed"
    return str(job_id)


def groups_json(client, window: str = "24h") -> list[dict]:
    response = client.get(FAILURES, {"window": window, "format": "json"})
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    body = json.loads(response.content)
    assert list(body) == ["groups"]
    return body["groups"]


def by_task_and_exception(groups: list[dict]) -> dict[tuple[str, str | None], dict]:
    return {(group["task"], group["exception"]): group for group in groups}


def post_group(client, action: str, key: str, **extra) -> list[str]:
    response = client.post(FAILURES, {"action": action, "group": key, **extra}, follow=True)
    assert response.status_code == 200
    return [str(message) for message in response.context["messages"]]


def test_failed_jobs_are_grouped_by_task_and_the_last_attempts_exception(admin_client):
    for n in range(3):
        failed(add, "builtins.ValueError", f"bad value {n}")
    failed(add, "builtins.KeyError", "missing")
    failed(quick_retry, "builtins.ValueError", "other task", 5)
    # Failed first with a timeout, then for good with a ValueError: counted under ValueError.
    changed_its_mind = quick_retry.enqueue(6).id
    assert fail_once(changed_its_mind, "builtins.TimeoutError", "slow", retryable=True) == (
        "retrying"
    )
    Job.objects.filter(pk=changed_its_mind).update(run_after=timezone.now())
    assert fail_once(changed_its_mind, "builtins.ValueError", "the last word") == "failed"
    add.enqueue(1, 1)  # not failed: in no group

    groups = groups_json(admin_client)

    assert [(g["task"], g["exception"], g["count"]) for g in groups] == [
        ("tests.support.tasks.basic.add", "builtins.ValueError", 3),
        ("tests.support.tasks.basic.quick_retry", "builtins.ValueError", 2),
        ("tests.support.tasks.basic.add", "builtins.KeyError", 1),
    ]
    for group in groups:
        assert list(group) == [
            "key",
            "task",
            "exception",
            "count",
            "first_seen",
            "last_seen",
            "message",
        ]
        assert group["first_seen"] <= group["last_seen"]
    add_errors = by_task_and_exception(groups)[
        ("tests.support.tasks.basic.add", "builtins.ValueError")
    ]
    assert add_errors["message"] == "bad value 2"  # the newest job's
    retried = by_task_and_exception(groups)[
        ("tests.support.tasks.basic.quick_retry", "builtins.ValueError")
    ]
    assert retried["message"] in ("other task", "the last word")


def test_the_window_is_on_failure_time(admin_client):
    recent = failed(add, "builtins.ValueError")
    two_days_ago = failed(add, "builtins.ValueError")
    Job.objects.filter(pk=two_days_ago).update(finished_at=timezone.now() - timedelta(days=2))
    two_hours_ago = failed(add, "builtins.KeyError")
    Job.objects.filter(pk=two_hours_ago).update(finished_at=timezone.now() - timedelta(hours=2))

    def counts(window: str) -> dict:
        return {g["exception"]: g["count"] for g in groups_json(admin_client, window)}

    assert counts("1h") == {"builtins.ValueError": 1}
    assert counts("24h") == {"builtins.ValueError": 1, "builtins.KeyError": 1}
    assert counts("7d") == {"builtins.ValueError": 2, "builtins.KeyError": 1}
    assert recent


def test_the_page_shows_each_group_with_a_link_to_its_jobs(admin_client):
    ours = {failed(add, "builtins.ValueError", "card declined") for _ in range(2)}
    failed(add, "builtins.KeyError")
    failed(quick_retry, "builtins.ValueError", "boom", 3)

    response = admin_client.get(FAILURES)

    assert response.status_code == 200
    html = response.content.decode()
    assert "card declined" in html
    assert html.count('class="lq-failure-group"') == 3
    assert "Retry all 2 jobs" in html
    # The link lists exactly the group's jobs.
    [row] = [row for row in response.context["rows"] if row["group"].count == 2]
    listed = admin_client.get(row["jobs_url"])
    assert listed.status_code == 200
    assert {str(job.pk) for job in listed.context["cl"].result_list} == ours


def test_a_failure_key_the_page_did_not_give_lists_nothing(admin_client):
    failed(add, "builtins.ValueError")
    response = admin_client.get(CHANGELIST, {"failure": "forged"})
    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == []


def test_group_retry_requeues_every_job_of_the_group_in_batches(admin_client, monkeypatch):
    monkeypatch.setattr(operations, "BATCH_SIZE", 4)  # 11 jobs: three batches
    group = [failed(add, "builtins.ValueError", f"n{n}") for n in range(11)]
    other_exception = failed(add, "builtins.KeyError")
    other_task = failed(quick_retry, "builtins.ValueError", "x", 1)
    [key] = [
        g["key"] for g in groups_json(admin_client) if g["count"] == 11
    ]  # the page as the operator saw it
    after_the_page = failed(add, "builtins.ValueError", "failed after the page was read")

    messages = post_group(admin_client, "retry", key)

    assert messages == ["11 jobs retried"]
    assert set(Job.objects.filter(pk__in=group).values_list("status", flat=True)) == {"queued"}
    for untouched in (other_exception, other_task, after_the_page):
        assert Job.objects.get(pk=untouched).status == "failed"
    history = LogEntry.objects.filter(action_flag=CHANGE, change_message="Retry")
    assert sorted(history.values_list("object_id", flat=True)) == sorted(group)


def test_a_job_that_left_the_group_since_the_page_is_left_alone(admin_client):
    first, second = (failed(add, "builtins.ValueError") for _ in range(2))
    [group] = groups_json(admin_client)
    # Between the page and the click another operator retried one, and a worker took it.
    execute(operator_actions_sql.retry([Job.objects.get(pk=first).pk]))
    claim_one(first, "w-other")

    messages = post_group(admin_client, "retry", group["key"])

    assert messages == ["1 job retried"]
    assert Job.objects.get(pk=second).status == "queued"
    assert Job.objects.get(pk=first).status == "running"


def test_group_delete_asks_first_then_deletes_every_job(admin_client, monkeypatch):
    monkeypatch.setattr(operations, "BATCH_SIZE", 2)
    group = [failed(add, "builtins.ValueError") for _ in range(5)]
    kept = failed(add, "builtins.KeyError")
    [key] = [g["key"] for g in groups_json(admin_client) if g["count"] == 5]

    asked = admin_client.post(FAILURES, {"action": "delete", "group": key, "window": "24h"})

    assert asked.status_code == 200
    assert "5 failed jobs of tests.support.tasks.basic.add" in asked.content.decode()
    assert Job.objects.filter(pk__in=group).count() == 5  # nothing deleted yet

    messages = post_group(admin_client, "delete", key, post="yes", window="24h")

    assert messages == ["5 jobs deleted"]
    assert not Job.objects.filter(pk__in=group).exists()
    assert Job.objects.filter(pk=kept).exists()


def test_the_page_returns_to_the_window_after_an_action(admin_client):
    failed(add, "builtins.ValueError")
    [group] = groups_json(admin_client, "7d")
    response = admin_client.post(
        FAILURES, {"action": "retry", "group": group["key"], "window": "7d"}
    )
    assert response.status_code == 302
    assert parse_qs(urlparse(response["Location"]).query) == {"window": ["7d"]}


def test_staff_without_the_view_permission_get_403_page_and_json(staff_client):
    failed(add, "builtins.ValueError")
    client = staff_client()
    assert client.get(FAILURES).status_code == 403
    assert client.get(FAILURES, {"format": "json"}).status_code == 403


def test_retry_needs_change_and_delete_needs_delete(staff_client, admin_client):
    ids = [failed(add, "builtins.ValueError") for _ in range(2)]
    [group] = groups_json(admin_client)
    viewer = staff_client("view_job")

    page = viewer.get(FAILURES)
    assert page.status_code == 200
    assert "Retry all" not in page.content.decode()
    assert "Delete…" not in page.content.decode()
    assert viewer.post(FAILURES, {"action": "retry", "group": group["key"]}).status_code == 403
    for confirmed in ({}, {"post": "yes"}):
        response = viewer.post(FAILURES, {"action": "delete", "group": group["key"], **confirmed})
        assert response.status_code == 403
    changer = staff_client("view_job", "change_job")
    response = changer.post(FAILURES, {"action": "delete", "group": group["key"], "post": "yes"})
    assert response.status_code == 403
    assert set(Job.objects.filter(pk__in=ids).values_list("status", flat=True)) == {"failed"}

    assert post_group(changer, "retry", group["key"]) == ["2 jobs retried"]
    assert set(Job.objects.filter(pk__in=ids).values_list("status", flat=True)) == {"queued"}


def test_retry_permission_without_delete_shows_only_retry(staff_client):
    failed(add, "builtins.ValueError")
    html = staff_client("view_job", "change_job").get(FAILURES).content.decode()
    assert "Retry 1 job" in html
    assert "Delete…" not in html


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"window": "2h"}, "Unknown window '2h'"),
        ({"format": "xml"}, "Unknown format 'xml'"),
    ],
)
def test_bad_page_parameters_are_a_400_saying_why(admin_client, params, reason):
    response = admin_client.get(FAILURES, params)
    assert response.status_code == 400
    assert reason in response.content.decode()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ({"action": "cancel", "group": "x"}, "Unknown action 'cancel'"),
        ({"action": "retry", "group": "forged"}, "not one the failures page gave"),
        ({"action": "retry"}, "not one the failures page gave"),
    ],
)
def test_bad_posts_are_a_400_and_change_nothing(admin_client, data, reason):
    job_id = failed(add, "builtins.ValueError")
    response = admin_client.post(FAILURES, data)
    assert response.status_code == 400
    assert reason in response.content.decode()
    assert Job.objects.get(pk=job_id).status == "failed"


def test_a_key_is_signed_and_round_trips():
    now = timezone.now()
    key = GroupKey("app.tasks.x", None, now - timedelta(hours=1), now)
    assert GroupKey.decode(key.encode()) == key
    tampered = re.sub(r":[^:]+$", ":AAAA", key.encode())
    with pytest.raises(ValueError, match="not one the failures page gave"):
        GroupKey.decode(tampered)
