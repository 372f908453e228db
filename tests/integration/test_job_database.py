"""The job table may live in another database than the project's models: every reader and
writer (enqueue, results, cancel, admin, progress views, prune) follows the backend's
``database`` option, with no database router."""

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import override_settings
from django.urls import reverse

from django_leasequeue import JobStatus
from django_leasequeue.models import Job
from django_leasequeue.progress.access import job_token
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.executor import execute
from django_leasequeue.tasks_framework import TaskResultStatus, task_backends
from tests.support.tasks.basic import add

pytestmark = pytest.mark.django_db(databases=["default", "jobs"])


@pytest.fixture
def jobs_backend():
    default = settings.TASKS["default"]
    tasks = {"default": {**default, "OPTIONS": {**default["OPTIONS"], "database": "jobs"}}}
    with override_settings(TASKS=tasks):
        yield task_backends["default"]


def _jobs(database: str) -> set[str]:
    return {str(pk) for pk in Job.objects.using(database).values_list("pk", flat=True)}


def test_enqueue_and_results_use_the_job_database(jobs_backend):
    result = add.enqueue(2, 3)
    assert _jobs("jobs") == {result.id} and _jobs("default") == set()
    assert jobs_backend.get_result(result.id).status == TaskResultStatus.READY


def test_cancel_and_admin_actions_change_the_job_database(jobs_backend, admin_client):
    cancelled, retried = add.enqueue(1, 1), add.enqueue(2, 2)
    assert jobs_backend.cancel([cancelled.id]) == {
        Job.objects.using("jobs").get(pk=cancelled.id).pk: JobStatus.CANCELLED
    }
    changelist = reverse("admin:leasequeue_job_changelist")
    html = admin_client.get(changelist).content.decode()
    assert cancelled.id[-8:] in html and retried.id[-8:] in html
    detail = admin_client.get(reverse("admin:leasequeue_job_change", args=[retried.id]))
    assert detail.status_code == 200 and "tests.support.tasks.basic.add" in detail.content.decode()
    admin_client.post(
        changelist,
        {"action": "cancel_jobs", "index": 0, "_selected_action": [retried.id], "post": "yes"},
    )
    assert Job.objects.using("jobs").get(pk=retried.id).status == JobStatus.CANCELLED
    admin_client.post(
        changelist, {"action": "retry_jobs", "index": 0, "_selected_action": [retried.id]}
    )
    assert Job.objects.using("jobs").get(pk=retried.id).status == JobStatus.QUEUED


def test_progress_views_read_the_job_database(jobs_backend, client):
    job_id = add.enqueue(1, 2).id
    claimed = execute(jobs_sql.claim_by_ids([job_id], worker_id="w", lease_seconds=30), "jobs")[0]
    assert execute(jobs_sql.progress(claimed.lease, 1, 4, "a quarter"), "jobs")
    url = reverse("leasequeue:job-status", args=[job_id])
    state = client.get(url, {"token": job_token(job_id)}).json()
    assert (state["status"], state["percent"], state["message"]) == ("running", 25, "a quarter")


def test_prunejobs_deletes_from_the_job_database(jobs_backend):
    job_id = add.enqueue(1, 2).id
    jobs_backend.cancel([job_id])
    Job.objects.using("jobs").filter(pk=job_id).update(finished_at="2000-01-01T00:00:00Z")
    call_command("prunejobs", "--days", "1")
    assert _jobs("jobs") == set()
