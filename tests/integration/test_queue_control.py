"""Queue control against the real PostgreSQL and Redis, statement by statement: paused queues
on every claim path, expiry, snoozes and unique periods (the worker-level tests are in
tests/acceptance/test_queue_control.py)."""

import asyncio
import io
import json
import threading
import time
from datetime import timedelta

import psycopg
import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import CommandError, call_command
from django.db import connection, connections, transaction
from django.db.models import F
from django.urls import reverse
from django.utils import timezone
from prometheus_client import REGISTRY

from django_leasequeue import Snooze
from django_leasequeue.control import pausing
from django_leasequeue.control.permission import ensure_pause_permission
from django_leasequeue.exceptions import PauseFailed
from django_leasequeue.management import status_output, status_report
from django_leasequeue.metrics.gauges import DatabaseCollector
from django_leasequeue.models import Job, PausedQueue
from django_leasequeue.schedules.declaration import declaration_of
from django_leasequeue.schedules.firing import run_now
from django_leasequeue.sql import flow as flow_sql
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql import operator_actions as operator_actions_sql
from django_leasequeue.sql import queue_control as queue_control_sql
from django_leasequeue.sql.executor import execute
from django_leasequeue.sql.jobs import database_now
from django_leasequeue.sql.schedules import sync_schedules
from django_leasequeue.tasks_framework import InvalidTask
from tests.acceptance import harness
from tests.periodic.every_second.tasks import tick
from tests.support.helpers import (
    claim_one,
    plan_nodes,
    recover_sweep,
    rows_read,
    try_claim,
    try_claim_batch,
)
from tests.support.tasks import control as control_tasks
from tests.support.tasks import flow as flow_tasks
from tests.support.tasks.basic import add, report

pytestmark = pytest.mark.django_db(transaction=True)


def _counter(name: str, queue: str, task: str) -> float:
    return REGISTRY.get_sample_value(name, {"queue": queue, "task": task}) or 0.0


# Pausing


def test_pause_and_resume_say_what_changed_and_paused_queues_lists_the_reasons(backend):
    assert backend.pause_queue("other", reason="incident 42") is True
    assert backend.pause_queue("other", reason="incident 43") is False  # the reason changes
    assert backend.paused_queues() == {"other": "incident 43"}
    assert backend.resume_queue("other") is True
    assert backend.resume_queue("other") is False
    assert backend.paused_queues() == {}


async def test_the_async_twins_pause_and_resume(backend):
    assert await backend.apause_queue("low", "async") is True
    assert await sync_to_async(backend.paused_queues)() == {"low": "async"}
    assert await backend.aresume_queue("low") is True
    await sync_to_async(connections.close_all)()  # the thread the twins ran in


def test_a_paused_queue_is_skipped_by_every_claim_path(backend):
    paused_jobs = [add.using(queue_name="other").enqueue(1, n).id for n in range(3)]
    live = add.enqueue(1, 1).id
    limited = flow_tasks.capped.using(queue_name="other").enqueue(1, 0).id
    backend.pause_queue("other")

    assert [str(job.id) for job in try_claim([*paused_jobs, live])] == [live]
    assert try_claim_batch(["other"]) == []
    assert execute(jobs_sql.oldest_due_job(None)) is None  # the live one is taken
    candidates = execute(flow_sql.flow_candidates(None, after="", partitions=5, per_partition=5))
    assert str(limited) not in {str(job.id) for job in candidates.jobs}
    with transaction.atomic():
        flow_claim = jobs_sql.claim_by_ids(
            [limited], worker_id="w", lease_seconds=30, flow_claim=True
        )
        assert execute(flow_claim) == []

    backend.resume_queue("other")
    assert {str(job.id) for job in try_claim_batch(["other"])} == set(paused_jobs)


def test_while_a_queue_is_paused_polls_read_each_open_queues_head_in_claim_order(backend):
    backend.enqueue_many([(add.using(queue_name="other"), (0, n), {}) for n in range(3000)])
    low = add.using(priority=-5).enqueue(0, 0).id
    first = add.enqueue(0, 1).id
    high = add.using(queue_name="high", priority=50).enqueue(0, 2).id
    backend.pause_queue("other", "incident")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE leasequeue_job")

    found = execute(queue_control_sql.open_queues(None))
    assert (found.paused, found.open) == (["other"], ["default", "high"])
    assert execute(queue_control_sql.open_queues(["other", "low"])).open == ["low"]
    assert execute(jobs_sql.oldest_due_job_by_queue(found.open)).id == Job.objects.get(pk=low).pk

    statement = jobs_sql.claim_batch_by_queue(found.open, 10, worker_id="w", lease_seconds=30)
    with connection.cursor() as cursor:
        cursor.execute("BEGIN")
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {statement.query.sql}", statement.params)
        [[[plan]]] = cursor.fetchall()
        cursor.execute("ROLLBACK")
    scans = [n for n in plan_nodes(plan["Plan"]) if n.get("Relation Name") == "leasequeue_job"]
    read = sum(
        n["Actual Rows"] * n["Actual Loops"] + n.get("Rows Removed by Filter", 0) for n in scans
    )
    assert read <= 20, read  # the 3,000 paused jobs are never walked

    claimed = execute(statement)
    assert [str(job.id) for job in claimed] == [high, first, low]


def test_pause_waits_for_a_claim_in_flight_and_holds_new_claims_until_it_commits(backend):
    job = add.using(queue_name="other").enqueue(1, 1).id
    with psycopg.connect(harness.test_database_url()) as claiming:
        # A claim statement that ran but whose transaction has not ended yet.
        claiming.execute("BEGIN")
        sql = jobs_sql.claim_batch(None, 1, worker_id="slow", lease_seconds=30)
        claiming.execute(sql.query.sql, sql.params)
        paused_at = []

        def pause() -> None:
            try:
                paused_at.append((backend.pause_queue("other"), time.monotonic()))
            finally:
                connections.close_all()

        pauser = threading.Thread(target=pause)
        pauser.start()
        time.sleep(0.5)
        assert not paused_at  # still waiting for the claim in flight
        committed_at = time.monotonic()
        claiming.execute("COMMIT")
        pauser.join(10)
    assert paused_at and paused_at[0][0] is True and paused_at[0][1] >= committed_at
    assert Job.objects.get(pk=job).worker_id == "slow"  # it claimed before the pause


def test_pause_gives_up_on_a_transaction_that_holds_the_table_and_changes_nothing(
    backend, monkeypatch
):
    monkeypatch.setattr(pausing, "LOCK_WAIT_MILLISECONDS", 200)
    with psycopg.connect(harness.test_database_url()) as idle:
        idle.execute("BEGIN")
        idle.execute("SELECT * FROM leasequeue_paused_queue")
        with pytest.raises(PauseFailed, match=r"did not end within 0\.2 s"):
            backend.pause_queue("other")
        idle.execute("ROLLBACK")
    assert backend.paused_queues() == {}


def test_pause_refuses_a_transaction_an_unknown_queue_and_an_unstorable_reason(backend):
    with transaction.atomic(), pytest.raises(RuntimeError, match=r"outside transaction\.atomic"):
        backend.pause_queue("other")
    with pytest.raises(ValueError, match="not one of the backend's QUEUES"):
        backend.pause_queue("typo")
    with pytest.raises(ValueError, match="cannot be stored"):
        backend.pause_queue("other", reason="nul \x00")
    assert backend.paused_queues() == {}


def test_resume_wakes_workers_for_the_queues_due_jobs(backend, redis_client):
    backend.pause_queue("other")
    ids = [add.using(queue_name="other").enqueue(1, n).id for n in range(3)]
    later = add.using(queue_name="other", run_after=timezone.now() + timedelta(hours=1))
    later.enqueue(1, 1)
    redis_client.delete(backend.wakeups.key("other"))  # popped and refused while paused
    backend.resume_queue("other")
    woken = [item.decode() for item in redis_client.lrange(backend.wakeups.key("other"), 0, -1)]
    assert woken == ids


def test_status_shows_pauses_and_does_not_call_a_paused_queues_wait_overdue(backend):
    add.using(queue_name="other").enqueue(1, 1)
    add.enqueue(1, 1)
    backend.pause_queue("other", "deploy")
    time.sleep(0.05)
    report = status_report.build(backend, max_age_seconds=0)
    by_name = {queue.name: queue for queue in report.queues}
    assert (by_name["other"].paused, by_name["other"].pause_reason) == (True, "deploy")
    assert not by_name["default"].paused
    assert any("queue 'default'" in p for p in report.problems)
    assert not any("'other'" in p for p in report.problems)
    text = status_output.render_text(report)
    assert "other (paused)" in text and "PAUSED: other (deploy): no worker claims its jobs" in text
    data = json.loads(json.dumps(status_output.as_json(report)))
    assert {q["name"]: q["paused"] for q in data["queues"]}["other"] is True


def test_the_paused_gauge_is_1_for_a_paused_queue_and_0_for_the_others(backend):
    add.enqueue(1, 1)
    backend.pause_queue("low")  # paused with no job at all: still reported
    [family] = [
        f for f in DatabaseCollector("default").collect() if f.name == "leasequeue_queue_paused"
    ]
    assert {sample.labels["queue"]: sample.value for sample in family.samples} == {
        "default": 0.0,
        "low": 1.0,
    }


def test_the_command_pauses_and_resumes(backend):
    out = io.StringIO()
    call_command("leasequeue", "pause", "other", "--reason", "db migration", stdout=out)
    assert backend.paused_queues() == {"other": "db migration"}
    call_command("leasequeue", "pause", "other", stdout=out)
    call_command("leasequeue", "resume", "other", stdout=out)
    call_command("leasequeue", "resume", "other", stdout=out)
    assert out.getvalue().splitlines() == [
        "Queue 'other' paused: no worker claims its jobs.",
        "Queue 'other' was paused already; reason updated.",
        "Queue 'other' resumed.",
        "Queue 'other' was not paused.",
    ]
    with pytest.raises(CommandError, match="not one of the backend's QUEUES"):
        call_command("leasequeue", "pause", "nope")


def test_the_admin_buttons_need_the_pause_permission(backend, staff_client):
    add.using(queue_name="other").enqueue(1, 1)
    changelist = reverse("admin:leasequeue_job_changelist")
    pause_url = reverse("admin:leasequeue_job_pause_queue")
    viewer = staff_client("view_job")
    assert pause_url not in viewer.get(changelist).text
    assert viewer.post(pause_url, {"queue": "other"}).status_code == 403
    assert backend.paused_queues() == {}

    operator = staff_client("view_job", "pause_queue")
    assert pause_url in operator.get(changelist).text
    response = operator.post(pause_url, {"queue": "other", "reason": "flaky API"}, follow=True)
    assert backend.paused_queues() == {"other": "flaky API"}
    page = response.text
    assert "Queue “other” paused" in page and "Paused" in page and "flaky API" in page
    assert operator.get(pause_url).status_code == 405
    operator.post(reverse("admin:leasequeue_job_resume_queue"), {"queue": "other"})
    assert backend.paused_queues() == {}


def test_a_pause_reason_has_one_limit_on_every_way_in(backend, staff_client):
    """1,000 characters through the backend (and its async twin), the command, and the admin's
    form and its POST; past it, each refuses with the limit and changes nothing."""
    longest, too_long = "x" * pausing.REASON_MAX_LENGTH, "y" * (pausing.REASON_MAX_LENGTH + 1)
    refusal = "A pause reason is at most 1,000 characters; this one has "
    assert backend.pause_queue("other", longest) is True
    with pytest.raises(ValueError, match=f"{refusal}1,001[.]"):
        backend.pause_queue("other", too_long)
    with pytest.raises(ValueError, match=refusal):
        async_to_sync(backend.apause_queue)("other", too_long)
    with pytest.raises(CommandError, match=refusal):
        call_command("leasequeue", "pause", "other", "--reason", too_long)
    assert backend.paused_queues() == {"other": longest}
    backend.resume_queue("other")

    add.using(queue_name="other").enqueue(1, 1)
    operator = staff_client("view_job", "pause_queue")
    changelist = reverse("admin:leasequeue_job_changelist")
    assert 'name="reason" maxlength="1000"' in operator.get(changelist).text
    pause_url = reverse("admin:leasequeue_job_pause_queue")
    response = operator.post(pause_url, {"queue": "other", "reason": "z" * 1_000_000}, follow=True)
    assert f"{refusal}1,000,000." in response.text
    assert backend.paused_queues() == {}
    operator.post(pause_url, {"queue": "other", "reason": longest})
    assert backend.paused_queues() == {"other": longest}


def test_the_commands_print_control_characters_escaped(backend):
    """A pause reason or a queue name (from the job table) holding terminal escapes (clear the
    screen, retitle the window, reverse the text) is shown escaped, not run; --json keeps it."""
    reason = "deploy \x1b[2J\x1b]0;pwned\x07 \u202eevil\n"
    backend.pause_queue("other", reason)
    job = add.enqueue(1, 1)
    Job.objects.filter(pk=job.id).update(queue_name="q\x1b[31m")
    out = io.StringIO()
    with pytest.raises(CommandError, match="no worker is alive") as unhealthy:
        call_command("leasequeue", "status", stdout=out)
    text = out.getvalue()
    assert "PAUSED: other (deploy \\x1b[2J\\x1b]0;pwned\\x07 \\u202eevil\\n)" in text
    assert "q\\x1b[31m" in text
    assert not any(char in text for char in "\x1b\x07\u202e")
    assert not any(char in str(unhealthy.value) for char in "\x1b\x07")
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("leasequeue", "status", "--json", stdout=out)
    queues = {queue["name"]: queue for queue in json.loads(out.getvalue())["queues"]}
    assert queues["other"]["pause_reason"] == reason and "q\x1b[31m" in queues

    for command in (
        ["leasequeue", "status", "--backend", "b\x1b]0;t\x07"],
        ["prunejobs", "--days", "1", "--backend", "b\x1b]0;t\x07"],
        ["runworkers", "--backend", "b\x1b]0;t\x07"],
        ["runworkers", "--queues", "default,q\x1b[2J"],
    ):
        with pytest.raises(CommandError) as refused:
            call_command(*command)
        assert "\\x1b" in str(refused.value) and "\x1b" not in str(refused.value), command


def test_the_pause_permission_is_django_leasequeue_pause_queue(django_user_model):
    user = django_user_model.objects.create_user("operator", is_staff=True)
    permission = Permission.objects.get(
        content_type__app_label="django_leasequeue", codename="pause_queue"
    )
    assert permission.name == "Can pause and resume queues"
    assert Permission.objects.filter(codename="pause_queue").count() == 1
    user.user_permissions.add(permission)
    user = django_user_model.objects.get(pk=user.pk)  # no permission cache
    assert user.has_perm("django_leasequeue.pause_queue")


def test_a_grant_of_the_earlier_leasequeue_pause_queue_moves_with_the_permission(
    django_user_model,
):
    """Versions before 0014 made the permission on the paused-queue model (leasequeue app):
    the next migrate moves it, with whoever holds it."""
    Permission.objects.filter(codename="pause_queue").delete()
    earlier = Permission.objects.create(
        content_type=ContentType.objects.get_for_model(PausedQueue),
        codename="pause_queue",
        name="Can pause and resume queues",
    )
    user = django_user_model.objects.create_user("operator", is_staff=True)
    user.user_permissions.add(earlier)
    ensure_pause_permission()
    [moved] = Permission.objects.filter(codename="pause_queue")
    assert moved.pk == earlier.pk and moved.content_type.app_label == "django_leasequeue"
    assert django_user_model.objects.get(pk=user.pk).has_perm("django_leasequeue.pause_queue")


# Expiry


def test_enqueue_sets_the_expiry_from_the_first_run_after_on_every_insert_path(backend):
    one = control_tasks.expiring.enqueue(1)
    due_later = timezone.now() + timedelta(minutes=5)
    later = control_tasks.expiring.using(run_after=due_later, expires_after=timedelta(seconds=30))
    delayed = later.enqueue(2)
    many = backend.enqueue_many([(control_tasks.expiring, (n,), {}) for n in range(100)])  # COPY
    rows = {str(job.id): job for job in Job.objects.all()}
    assert rows[one.id].expires_at - rows[one.id].run_after == timedelta(seconds=1)
    assert rows[delayed.id].expires_at == due_later + timedelta(seconds=30)
    assert {rows[r.id].expires_at - rows[r.id].run_after for r in many} == {timedelta(seconds=1)}
    assert Job.objects.get(pk=add.enqueue(1, 1).id).expires_at is None


def test_a_scheduled_tasks_jobs_expire_too(backend):
    declaration = declaration_of(tick.using(expires_after=30))
    now = execute(database_now())
    execute(sync_schedules("default", [declaration], [now + timedelta(hours=1)], now))
    job = Job.objects.get(pk=run_now(backend.enqueuer, declaration))
    assert job.expires_at - job.run_after == timedelta(seconds=30)


def test_an_expired_job_is_never_claimed_even_at_the_front_of_the_queue(backend):
    expired = control_tasks.expiring.using(expires_after=0.05).enqueue(1).id
    live = add.enqueue(1, 1).id
    time.sleep(0.1)
    assert try_claim([expired]) == []
    assert [str(job.id) for job in try_claim_batch()] == [live]


EXPIRED_AHEAD = 3000


def _expired_backlog_then_a_live_job(backend, expired: int) -> str:
    backend.enqueue_many([(control_tasks.expiring, (n,), {}) for n in range(expired)])
    Job.objects.update(run_after=F("run_after") - timedelta(minutes=2), expires_at=F("run_after"))
    live = add.enqueue(1, 1).id
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE leasequeue_job")
    return live


def test_claims_over_every_queue_read_no_expired_job_ahead_of_the_live_ones(backend):
    live = _expired_backlog_then_a_live_job(backend, EXPIRED_AHEAD)
    reads = {
        "claim_batch": jobs_sql.claim_batch(None, 10, worker_id="w", lease_seconds=30),
        "oldest_due_job": jobs_sql.oldest_due_job(None),
        "stale_due_jobs": jobs_sql.stale_due_jobs(older_than_seconds=0, limit=10),
    }
    for name, statement in reads.items():
        # The live job and the probes for the priorities present (expired rows are not read).
        assert rows_read(statement) <= 10, name
    assert execute(jobs_sql.oldest_due_job(None)).id == Job.objects.get(pk=live).pk
    assert [str(row["id"]) for row in execute(reads["stale_due_jobs"])] == [live]
    assert [str(job.id) for job in try_claim_batch()] == [live]


async def test_polls_read_jobs_with_an_expiry_while_the_sweep_sees_one_waiting(backend):
    """Without a job with an expiry waiting, a poll plans the cheaper claim of the others."""
    expiring = (await control_tasks.expiring.using(expires_after=600).aenqueue(1)).id
    plain = (await add.aenqueue(1, 1)).id
    async with recover_sweep(backend) as sweep:
        await sweep.sweep_once()
        assert sweep.expiring_waiting
        without = jobs_sql.claim_batch(
            None, 10, worker_id="w", lease_seconds=30, with_expiring=False
        )
        assert [str(job.id) for job in await sweep.db.run(without)] == [plain]
        assert [str(job.id) for job in await sync_to_async(try_claim_batch)()] == [expiring]
        await sweep.sweep_once()
        assert not sweep.expiring_waiting
    await sync_to_async(connections.close_all)()


def test_reads_of_each_open_queues_head_walk_at_most_1000_expired_jobs(backend):
    live = _expired_backlog_then_a_live_job(backend, EXPIRED_AHEAD)
    claim = {"worker_id": "w", "lease_seconds": 30}
    reads = {
        "claim_batch_by_queue": jobs_sql.claim_batch_by_queue(["default"], 10, **claim),
        "oldest_due_job_by_queue": jobs_sql.oldest_due_job_by_queue(["default"]),
        "stale_due_jobs_by_queue": jobs_sql.stale_due_jobs_by_queue(
            ["default"], older_than_seconds=0, limit=10
        ),
        "due_in_queue": queue_control_sql.due_in_queue("default", limit=10),
    }
    for name, statement in reads.items():
        assert rows_read(statement) <= 1010, name  # 1000 walked, and the pause list's reads
    # Nothing past the walk; the sweep fails the backlog, then the live job is the head.
    assert execute(reads["claim_batch_by_queue"]) == []
    while execute(queue_control_sql.expire_jobs(limit=1000)):
        pass
    assert Job.objects.filter(status="failed").count() == EXPIRED_AHEAD
    assert [str(job.id) for job in execute(reads["claim_batch_by_queue"])] == [live]


def test_expiring_jobs_are_claimed_by_priority_then_earliest_expiry_beside_plain_ones(backend):
    soon = control_tasks.expiring.using(expires_after=60).enqueue(1).id
    later = control_tasks.expiring.using(expires_after=600).enqueue(2).id
    plain = add.enqueue(1, 1).id
    urgent = control_tasks.expiring.using(expires_after=600, priority=5).enqueue(3).id
    low = add.using(priority=-5).enqueue(1, 1).id
    claimed = [str(job.id) for _ in range(6) for job in try_claim_batch(limit=1)]
    # Priority first; within one, the heads merged in enqueue order (earliest expiry first).
    assert claimed == [urgent, soon, later, plain, low]


def test_a_live_job_among_the_first_1000_walked_is_claimed_past_the_expired_ones(backend):
    live = _expired_backlog_then_a_live_job(backend, 900)
    oldest = execute(jobs_sql.oldest_due_job_by_queue(["default"]))
    assert oldest.id == Job.objects.get(pk=live).pk
    claimed = jobs_sql.claim_batch_by_queue(["default"], 10, worker_id="w", lease_seconds=30)
    assert [str(job.id) for job in execute(claimed)] == [live]


async def test_the_sweep_fails_expired_jobs_with_job_expired_without_an_attempt(backend):
    expired = await sync_to_async(control_tasks.expiring.using(expires_after=0.05).enqueue)(1)
    # Live for as long as a loaded machine may take to reach the sweep (its task's 1 s is not).
    live = await sync_to_async(control_tasks.expiring.using(expires_after=600).enqueue)(2)
    path = "tests.support.tasks.control.expiring"
    before = _counter("leasequeue_jobs_expired_total", "default", path)
    failed_before = _counter("leasequeue_jobs_failed_total", "default", path)
    await asyncio.sleep(0.1)
    async with recover_sweep(backend) as sweep:
        await sweep.sweep_once()
    job = await Job.objects.aget(pk=expired.id)
    assert (job.status, job.attempt, job.started_at) == ("failed", 0, None)
    assert job.finished_at is not None
    [error] = job.errors
    assert error["exception_class_path"] == "django_leasequeue.exceptions.JobExpired"
    assert "not started within its expires_after" in error["message"]
    assert (await Job.objects.aget(pk=live.id)).status == "queued"
    assert _counter("leasequeue_jobs_expired_total", "default", path) == before + 1
    assert _counter("leasequeue_jobs_failed_total", "default", path) == failed_before + 1
    await sync_to_async(connections.close_all)()


def test_the_sweep_finds_expired_jobs_through_its_partial_index(backend):
    backend.enqueue_many([(control_tasks.expiring, (n,), {}) for n in range(2000)])
    backend.enqueue_many([(add, (n, n), {}) for n in range(2000)])
    statement = queue_control_sql.expire_jobs(limit=500)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE leasequeue_job")
        cursor.execute("BEGIN")
        cursor.execute(f"EXPLAIN (FORMAT JSON) {statement.query.sql}", statement.params)
        [[[plan]]] = cursor.fetchall()
        cursor.execute("ROLLBACK")
    indexes = {node.get("Index Name") for node in plan_nodes(plan["Plan"])}
    assert "leasequeue_job_expiry" in indexes


def test_a_retry_that_would_start_after_the_expiry_ends_expired(backend):
    job_id = control_tasks.fails_with_a_late_retry.enqueue().id
    claimed = claim_one(job_id, "w")
    failed = execute(
        jobs_sql.fail(
            claimed.lease,
            exception_class_path="builtins.ValueError",
            message="not now",
            traceback="",
            retryable=True,
            backoff_cap_seconds=600,
        )
    )
    assert failed.status == "retrying" and failed.doomed
    [expired] = execute(queue_control_sql.expire_doomed([claimed.id]))
    assert str(expired.id) == job_id
    job = Job.objects.get(pk=job_id)
    assert (job.status, job.attempt) == ("failed", 1)
    assert [e["exception_class_path"] for e in job.errors] == [
        "builtins.ValueError",
        "django_leasequeue.exceptions.JobExpired",
    ]


def test_an_operators_retry_runs_an_expired_job_again(backend):
    job_id = control_tasks.expiring.using(expires_after=0.05).enqueue(1).id
    time.sleep(0.1)
    execute(queue_control_sql.expire_jobs(limit=10))
    [row] = execute(operator_actions_sql.retry([job_id]))
    assert Job.objects.get(pk=job_id).expires_at is None
    assert [str(job.id) for job in try_claim([row["id"]])] == [job_id]


def test_expiry_options_are_checked(backend):
    for bad in (0, -1, "5m", float("nan"), timedelta(0)):
        with pytest.raises(InvalidTask, match="expires_after"):
            control_tasks.expiring.using(expires_after=bad)


# Snoozes


def test_a_snooze_queues_the_job_again_without_counting_the_attempt(backend):
    job_id = add.enqueue(1, 1).id
    claimed = claim_one(job_id, "sleepy")
    before = execute(database_now())
    outcome = execute(queue_control_sql.snooze(claimed.lease, 30, max_snoozes=5))
    after = execute(database_now())
    assert outcome.status == "queued"
    job = Job.objects.get(pk=job_id)
    assert (job.status, job.attempt, job.snoozes, job.worker_ids) == ("queued", 0, 1, [])
    # 30 s from the snooze's own clock, which read between the two readings around it.
    assert before + timedelta(seconds=30) <= job.run_after <= after + timedelta(seconds=30)
    assert job.lease_expires_at is None


def test_a_stale_lease_cannot_snooze_the_job(backend):
    job_id = add.enqueue(1, 1).id
    stale = claim_one(job_id, "old", lease_seconds=0.01)
    time.sleep(0.05)
    execute(jobs_sql.recover_expired(limit=10, backoff_cap_seconds=0))
    time.sleep(0.01)
    current = claim_one(job_id, "new")
    assert execute(queue_control_sql.snooze(stale.lease, 30, max_snoozes=5)) is None
    job = Job.objects.get(pk=job_id)
    assert (job.status, job.worker_id, job.snoozes) == ("running", "new", 0)
    assert job.lease_version == current.lease.lease_version


def test_past_max_snoozes_the_job_fails_with_too_many_snoozes(backend):
    job_id = add.enqueue(1, 1).id
    for _ in range(2):
        lease = claim_one(job_id, "w").lease
        assert execute(queue_control_sql.snooze(lease, 0, max_snoozes=2)).status == "queued"
    lease = claim_one(job_id, "w").lease
    assert execute(queue_control_sql.snooze(lease, 0, max_snoozes=2)).status == "failed"
    job = Job.objects.get(pk=job_id)
    assert (job.status, job.attempt, job.snoozes) == ("failed", 1, 3)
    assert job.errors[-1]["exception_class_path"] == "django_leasequeue.exceptions.TooManySnoozes"


def test_a_snooze_of_a_job_whose_cancel_was_requested_ends_it_cancelled(backend):
    job_id = add.enqueue(1, 1).id
    lease = claim_one(job_id, "w").lease
    backend.cancel([job_id])
    assert execute(queue_control_sql.snooze(lease, 10, max_snoozes=5)).status == "cancelled"


def test_snooze_takes_seconds_or_a_timedelta_and_refuses_a_negative_one():
    assert Snooze(timedelta(minutes=1)).seconds == 60.0
    assert Snooze(0).seconds == 0.0
    for bad in (-1, float("inf"), "10", True):
        with pytest.raises(ValueError, match="0 seconds or more"):
            Snooze(bad)


# Unique periods


def test_within_its_period_a_key_returns_the_first_job_whatever_its_status(backend):
    # A period no pause of a loaded machine outlasts between the two enqueues.
    held = control_tasks.briefly_unique.using(unique_for=timedelta(minutes=10))
    first = held.enqueue(1)
    Job.objects.filter(pk=first.id).update(status="succeeded", finished_at=timezone.now())
    again = held.enqueue(1)
    assert again.id == first.id
    assert backend.get_result(again.id).status == "SUCCESSFUL"
    # Past its period (0.5 s), a finished job holds its key no longer.
    brief = control_tasks.briefly_unique.enqueue(3)
    Job.objects.filter(pk=brief.id).update(status="succeeded", finished_at=timezone.now())
    time.sleep(0.6)
    after = control_tasks.briefly_unique.enqueue(3)
    assert after.id != brief.id
    assert Job.objects.filter(unique_key="briefly:1").count() == 1
    assert Job.objects.filter(unique_key="briefly:3").count() == 2


def test_in_one_batch_a_key_held_for_a_period_is_enqueued_once(backend):
    results = backend.enqueue_many([(control_tasks.briefly_unique, (7,), {})] * 3)
    assert len({result.id for result in results}) == 1
    assert Job.objects.filter(unique_key="briefly:7").count() == 1


def test_an_unfinished_job_still_holds_its_key_after_the_period(backend):
    first = control_tasks.briefly_unique.enqueue(2)
    time.sleep(0.6)
    assert control_tasks.briefly_unique.enqueue(2).id == first.id


def test_without_unique_for_a_finished_job_does_not_hold_its_key(backend):
    first = report.enqueue(5)
    Job.objects.filter(pk=first.id).update(status="succeeded", finished_at=timezone.now())
    assert report.enqueue(5).id != first.id


def test_unique_for_needs_a_unique_key_and_a_positive_duration(backend):
    with pytest.raises(InvalidTask, match="unique_for needs a unique_key"):
        control_tasks.expiring.using(unique_for=timedelta(hours=1))
    with pytest.raises(InvalidTask, match="unique_for must be a positive duration"):
        report.using(unique_for=-3)
    assert report.using(unique_for=timedelta(hours=1)).unique_for == timedelta(hours=1)
