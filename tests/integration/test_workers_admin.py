"""The Workers page, the job -> worker link, and the queue summary's estimates on a backlog."""

import re
from datetime import timedelta

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse
from django.utils import timezone

from django_leasequeue.choices import WorkerState
from django_leasequeue.models import Job, Worker
from django_leasequeue.sql import reads as reads_sql
from django_leasequeue.sql import workers as workers_sql
from django_leasequeue.sql.executor import execute
from tests.support.helpers import claim_one
from tests.support.tasks.basic import add

pytestmark = pytest.mark.django_db(transaction=True)

WORKERS = reverse("admin:leasequeue_worker_changelist")


def worker_row(worker_id: str, *, heartbeat_ago: float = 0.0, **fields) -> Worker:
    now = timezone.now()
    return Worker.objects.create(
        id=worker_id,
        host="web-1",
        pid=4321,
        queues=["default", "emails"],
        concurrency=10,
        lease_seconds=30.0,
        started_at=now - timedelta(hours=1),
        heartbeat_at=now - timedelta(seconds=heartbeat_ago),
        **fields,
    )


def test_a_worker_is_alive_dead_past_its_lease_or_stopped():
    now = timezone.now()
    assert worker_row("a", heartbeat_ago=5).state(now) == WorkerState.ALIVE
    assert worker_row("b", heartbeat_ago=31).state(now) == WorkerState.DEAD
    stopped = worker_row("c", stopped_at=now, exit="stopped")
    killed = worker_row("d", stopped_at=now, exit="killed by SIGKILL")
    assert stopped.state(now) == WorkerState.STOPPED
    assert killed.state(now) == WorkerState.DEAD
    alive = {row["id"]: row["alive"] for row in execute(workers_sql.workers())}
    assert alive == {"a": True, "b": False, "c": False, "d": False}


def test_workers_page_lists_each_worker_with_its_state_read_only(admin_client):
    worker_row("host-a:11:w0:aaaaaa", heartbeat_ago=2, jobs_running=3, jobs_done=1234)
    worker_row("host-b:12:w0:bbbbbb", heartbeat_ago=120)
    html = admin_client.get(WORKERS).content.decode()
    assert "host-a:11:w0:aaaaaa" in html and "host-b:12:w0:bbbbbb" in html
    assert "lq-worker-alive" in html and "lq-worker-dead" in html
    assert "default, emails" in html and "1234" in html
    change = reverse("admin:leasequeue_worker_change", args=[quote("host-a:11:w0:aaaaaa")])
    detail = admin_client.get(change)
    assert detail.status_code == 200
    assert 'name="_save"' not in detail.content.decode()  # read-only
    assert admin_client.post(change, {"host": "evil"}).status_code == 403
    assert Worker.objects.get(pk="host-a:11:w0:aaaaaa").host == "web-1"
    assert admin_client.get(reverse("admin:leasequeue_worker_add")).status_code == 403
    delete = reverse("admin:leasequeue_worker_delete", args=[quote("host-a:11:w0:aaaaaa")])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403


def test_workers_page_needs_staff(client, django_user_model):
    assert client.get(WORKERS).status_code == 302  # to the login page
    user = django_user_model.objects.create_user("plain", password="pw")
    client.force_login(user)
    assert client.get(WORKERS).status_code == 302


def test_a_job_links_to_its_worker_in_the_list_and_on_its_page(admin_client):
    worker_row("host-a:11:w0:aaaaaa")
    job_id = claim_one(add.enqueue(1, 2).id, "host-a:11:w0:aaaaaa").id
    url = reverse("admin:leasequeue_worker_change", args=[quote("host-a:11:w0:aaaaaa")])
    listing = admin_client.get(reverse("admin:leasequeue_job_changelist")).content.decode()
    detail = admin_client.get(reverse("admin:leasequeue_job_change", args=[job_id]))
    assert f'href="{url}"' in listing
    assert f'href="{url}"' in detail.content.decode()
    assert admin_client.get(url).status_code == 200


def test_summary_counts_exactly_up_to_the_cap_and_estimates_above_it_saying_so(admin_client):
    for _ in range(30):
        add.enqueue(1, 1)
    for _ in range(3):
        add.using(queue_name="high").enqueue(1, 1)
    rows = {row["queue_name"]: row for row in execute(reads_sql.queue_summary(exact_up_to=10))}
    # 30 jobs: every slice of the estimate holds fewer than its probe reads, so all are counted.
    assert rows["default"]["queued"] == 30 and rows["default"]["estimated"] == ["queued"]
    assert rows["high"]["queued"] == 3 and rows["high"]["estimated"] == []
    exact = {row["queue_name"]: row for row in execute(reads_sql.queue_summary())}
    assert exact["default"]["queued"] == 30 and exact["default"]["estimated"] == []


def test_summary_oldest_due_skips_jobs_not_yet_due():
    later = add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(1, 1)
    [row] = execute(reads_sql.queue_summary())
    assert row["queued"] == 1 and row["oldest_due_age"] is None
    due = add.enqueue(1, 1)
    Job.objects.filter(pk=due.id).update(run_after=timezone.now() - timedelta(minutes=5))
    [row] = execute(reads_sql.queue_summary())
    assert row["queued"] == 2
    assert 299 < row["oldest_due_age"].total_seconds() < 330
    assert later.id  # still queued, not due


def test_the_admin_marks_estimated_counts(admin_client, backend):
    count = reads_sql.SUMMARY_EXACT_UP_TO + 100
    backend.enqueue_many([(add, (i, 1), {}) for i in range(count)])
    html = admin_client.get(reverse("admin:leasequeue_job_changelist")).content.decode()
    shown = re.search(r"status__exact=queued\">.*?≈</abbr> (\d+)</a>", html, re.S)
    assert shown, "the queued count is not marked as an estimate"
    assert abs(int(shown.group(1)) - count) < count * 0.35


def test_summary_estimates_a_count_over_the_cap_from_index_probes(backend):
    """500 jobs, counted exactly up to 10: the estimate cuts their ids into 16 slices and reads
    each from both ends, 16 index entries a probe (most of the 500 here), extrapolating the
    density of what it read over the rest; ids spread evenly, so it lands close (a 35% margin
    is more than five standard deviations of this estimator). Bursty backlogs:
    test_backlog_estimates.py."""
    backend.enqueue_many([(add, (i, 1), {}) for i in range(500)])
    statement = reads_sql.queue_summary(exact_up_to=10, slices=16, per_probe=16)
    [row] = execute(statement)
    assert row["estimated"] == ["queued"]
    assert 325 <= row["queued"] <= 675


@pytest.mark.parametrize(
    "url",
    [
        "/admin/leasequeue/worker/%00/change/",
        "/admin/leasequeue/worker/host%00a/change/",
        "/admin/leasequeue/worker/%00/history/",
    ],
)
def test_an_id_no_row_can_have_reads_as_a_missing_object_not_a_500(admin_client, url):
    """A NUL cannot be in PostgreSQL's text: the page answers as Django does for any id that
    matches nothing (back to the admin's index, saying so), instead of a DataError. (The other
    pages' keys, uuids and integers, are refused by Django before any query.)"""
    worker_row("host-a:11:w0:aaaaaa")
    response = admin_client.get(url, follow=True)
    assert response.redirect_chain == [("/admin/", 302)]
    [message] = [str(message) for message in response.context["messages"]]
    assert message.endswith("exist. Perhaps it was deleted?")


def test_the_workers_list_refuses_lookups_it_does_not_offer(admin_client):
    worker_row("host-a:11:w0:aaaaaa")
    for refused in ("host__regex=^web", "pid__gt=1", "id__startswith=host", "queues__0=x"):
        assert admin_client.get(f"{WORKERS}?{refused}").status_code == 400, refused
    for offered in ("q=web-1", "o=-3", "p=1"):
        response = admin_client.get(f"{WORKERS}?{offered}")
        assert response.status_code == 200, offered
        assert [w.pk for w in response.context["cl"].result_list] == ["host-a:11:w0:aaaaaa"]
