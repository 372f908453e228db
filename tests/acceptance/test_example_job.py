"""The demo site's job under real workers: progress, a checkpoint, and a retry that resumes."""

import pytest

from django_leasequeue.models import Job
from example_project.matching.models import Project
from example_project.matching.tasks import CHECKPOINT_STEP, STEPS, compute_match
from tests.acceptance.harness import wait_until

REQUEST_ID_HOOK = "example_project.matching.request_ids.RequestIdHook"

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]


def test_the_failing_project_retries_and_resumes_from_its_checkpoint(start_workers):
    steady = Project.objects.create(name="Steady", summary="-", skills=[])
    flaky = Project.objects.create(name="Flaky", summary="-", skills=[], fails_first_attempt=True)
    # As the demo's view enqueues them (RequestIdMiddleware, RequestIdHook): with its request id.
    requested = compute_match.using(meta={"request_id": "req-7"})
    ids = {p.name: requested.enqueue(7, p.pk).id for p in (steady, flaky)}
    workers = start_workers("--queues", "*", options={"hooks": [REQUEST_ID_HOOK]})
    wait_until(
        lambda: {j.status for j in Job.objects.filter(pk__in=ids.values())} == {"succeeded"},
        60,
        "both match jobs",
    )
    steady_job, flaky_job = Job.objects.get(pk=ids["Steady"]), Job.objects.get(pk=ids["Flaky"])
    assert steady_job.attempt == 1 and steady_job.result["resumed_from_step"] is None
    assert flaky_job.attempt == 2
    assert [e["exception_class_path"] for e in flaky_job.errors] == [
        "example_project.matching.tasks.TeamServiceUnavailable"
    ]
    assert flaky_job.result["resumed_from_step"] == CHECKPOINT_STEP
    assert flaky_job.checkpoint["step"] == CHECKPOINT_STEP
    assert flaky_job.progress["current"] == flaky_job.progress["total"] == STEPS
    assert 0 < steady_job.result["score"] <= 100
    # The demo's hook: the job's log lines name the request that submitted it, every attempt.
    log = workers.log()
    assert "Matching user 7 with Steady (attempt 1, request req-7)." in log
    assert "Matching user 7 with Flaky (attempt 2, request req-7)." in log
