"""``leasequeue:metrics``: who may read it, the enqueue counter, the gauges read at scrape time,
and the app without prometheus-client. Workers' counters are scraped in
tests/acceptance/test_operators.py, from real ``runworkers`` processes."""

import subprocess
import sys
from datetime import timedelta

import pytest
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from django_leasequeue.models import Worker
from tests.support.tasks.basic import add

pytestmark = pytest.mark.django_db(transaction=True)

URL = reverse("leasequeue:metrics")
TOKEN = "s3cret-token-for-prometheus"


def samples(body: bytes) -> dict[tuple[str, tuple], float]:
    """``(sample name, sorted labels) -> value`` of a scrape."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples
    }


@pytest.fixture
def with_token(settings):
    default = settings.TASKS["default"]
    settings.TASKS = {
        "default": {**default, "OPTIONS": {**default["OPTIONS"], "metrics_token": TOKEN}}
    }


def test_anonymous_is_refused_and_asked_for_a_token(client):
    response = client.get(URL)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_signed_in_non_staff_is_forbidden(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("plain", password="pw"))
    assert client.get(URL).status_code == 403


def test_staff_reads_the_metrics(admin_client):
    response = admin_client.get(URL)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    assert ("leasequeue_workers_alive", ()) in samples(response.content)


def test_the_bearer_token_from_options_opens_it_and_a_wrong_one_does_not(client, with_token):
    assert client.get(URL, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert client.get(URL, headers={"Authorization": "Bearer nope"}).status_code == 403
    assert client.get(URL, headers={"Authorization": f"Basic {TOKEN}"}).status_code == 401


def test_no_token_configured_means_no_token_opens_it(client):
    assert client.get(URL, headers={"Authorization": "Bearer anything"}).status_code == 403


def test_only_get(admin_client):
    assert admin_client.post(URL).status_code == 405


def test_enqueue_counts_on_commit_only(admin_client):
    key = (
        "leasequeue_jobs_enqueued_total",
        (("queue", "high"), ("task", "tests.support.tasks.basic.add")),
    )
    before = samples(admin_client.get(URL).content).get(key, 0.0)
    with transaction.atomic():
        add.using(queue_name="high").enqueue(1, 2)
        transaction.set_rollback(True)
    assert samples(admin_client.get(URL).content).get(key, 0.0) == before
    add.using(queue_name="high").enqueue(1, 2)
    add.get_backend().enqueue_many([(add.using(queue_name="high"), (i, 1), {}) for i in range(99)])
    assert samples(admin_client.get(URL).content)[key] == before + 100


def test_gauges_come_from_the_database_at_scrape_time(admin_client):
    for _ in range(4):
        add.enqueue(1, 1)
    old = add.using(queue_name="low").enqueue(1, 1)
    from django_leasequeue.models import Job

    Job.objects.filter(pk=old.id).update(run_after=timezone.now() - timedelta(minutes=10))
    now = timezone.now()
    for index, heartbeat_ago in enumerate([1, 2, 300]):
        Worker.objects.create(
            id=f"w{index}",
            host="h",
            pid=index + 1,
            concurrency=1,
            lease_seconds=30,
            started_at=now,
            heartbeat_at=now - timedelta(seconds=heartbeat_ago),
        )
    scraped = samples(admin_client.get(URL).content)
    assert scraped[("leasequeue_jobs_queued", (("queue", "default"),))] == 4
    assert scraped[("leasequeue_jobs_queued", (("queue", "low"),))] == 1
    assert scraped[("leasequeue_jobs_running", (("queue", "default"),))] == 0
    # A declared queue without jobs (the QUEUES of tests/support/settings/__init__.py) has its
    # series, at zero.
    for gauge in ("queued", "running", "retrying"):
        assert scraped[(f"leasequeue_jobs_{gauge}", (("queue", "other"),))] == 0
    assert scraped[("leasequeue_oldest_due_job_age_seconds", (("queue", "other"),))] == 0
    assert ("leasequeue_jobs_queued", (("queue", "nowhere"),)) not in scraped
    age = scraped[("leasequeue_oldest_due_job_age_seconds", (("queue", "low"),))]
    assert 600 <= age < 660
    assert scraped[("leasequeue_workers_alive", ())] == 2  # the third is past its lease


def test_without_prometheus_client_the_app_imports_and_says_what_to_install():
    """In a fresh interpreter where prometheus_client cannot be imported."""
    script = """
import sys
sys.modules["prometheus_client"] = None  # ImportError on import
import django
django.setup()
from django_leasequeue.metrics import counters, views
from django_leasequeue import MetricsUnavailable
from django_leasequeue.metrics.client import require
from django_leasequeue import urls  # the URLconf still loads
counters.enqueued([("default", "t")])  # counting is a no-op
counters.started("default", "t", None, None)
try:
    require()
except MetricsUnavailable as exc:
    print("REFUSED:", exc)
from django_leasequeue.checks import check_backend
from django_leasequeue.conf import BackendConfig
print("CHECKS:", [m.id for m in check_backend("default", BackendConfig(metrics_port=9300))])
print("WITHOUT PORT:", [m.id for m in check_backend("default", BackendConfig())])
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert "REFUSED: Metrics need prometheus-client: pip install 'django-leasequeue[metrics]'." in (
        done.stdout
    )
    # runworkers' checks refuse a metrics_port it could not serve (no crash loop later).
    assert "CHECKS: ['leasequeue.E006']" in done.stdout
    assert "WITHOUT PORT: []" in done.stdout


def _counter(name: str, queue: str, task: str) -> float:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value(name, {"queue": queue, "task": task}) or 0.0


async def test_a_write_refused_by_fencing_counts_as_a_stale_write():
    """A worker whose lease an operator took away tries to save a checkpoint: PostgreSQL
    refuses it (fenced by lease_version), and the refusal is counted, by queue and task."""
    from asgiref.sync import sync_to_async
    from django.db import connections

    from django_leasequeue.exceptions import LeaseLost
    from django_leasequeue.runtime.database import Database
    from django_leasequeue.runtime.job_handle import JobHandle
    from django_leasequeue.sql import operator_actions as operator_actions_sql
    from django_leasequeue.sql.executor import execute
    from django_leasequeue.sql.records import ClaimedJob
    from tests.support.helpers import claim_one

    def take_away() -> ClaimedJob:
        try:
            claimed = claim_one(add.using(queue_name="low").enqueue(1, 2).id, "worker-a")
            assert execute(operator_actions_sql.force_release([claimed.id]))
            return claimed
        finally:
            connections.close_all()  # this thread's connection, or the test database stays busy

    claimed = await sync_to_async(take_away)()
    before = _counter(
        "leasequeue_stale_writes_rejected_total", "low", "tests.support.tasks.basic.add"
    )
    db = Database("default", prepared_statements=False, name="test", lease_seconds=30)

    async def publish(job_id, event) -> None:
        return None

    handle = JobHandle(claimed, db=db, progress_interval=0.0, publish=publish)
    try:
        with pytest.raises(LeaseLost):
            await handle.save_checkpoint({"step": 2})
    finally:
        await db.close()
    after = _counter(
        "leasequeue_stale_writes_rejected_total", "low", "tests.support.tasks.basic.add"
    )
    assert after == before + 1
