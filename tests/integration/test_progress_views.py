"""The JSON status view the progress bar polls: same authorisation as the websocket."""

import pytest
from django.test import Client

from django_leasequeue.ids import uuid7
from django_leasequeue.progress.access import job_token
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.executor import execute
from tests.support.helpers import claim_one
from tests.support.tasks.basic import quick_retry
from tests.support.viewers import aged_token, forged_token, staff_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def job(backend):
    claimed = claim_one(quick_retry.enqueue(1).id, "worker-a")
    assert execute(jobs_sql.progress(claimed.lease, 3, 12, "a quarter"))
    return claimed


def _url(job_id, token: str | None = None) -> str:
    url = f"/leasequeue/jobs/{job_id}/status/"
    return f"{url}?token={token}" if token else url


def test_staff_with_view_permission_reads_the_state(client: Client, job):
    client.force_login(staff_user(can_view=True))
    response = client.get(_url(job.id))
    assert response.status_code == 200
    assert response.json() == {
        "job_id": str(job.id),
        "status": "running",
        "current": 3.0,
        "total": 12.0,
        "message": "a quarter",
        "percent": 25,
        "attempt": 1,
        "final": False,
    }
    assert "no-store" in response["Cache-Control"]


def test_token_holder_reads_the_state_without_login(client: Client, job):
    response = client.get(_url(job.id, job_token(job.id)))
    assert (response.status_code, response.json()["percent"]) == (200, 25)


@pytest.mark.parametrize(
    "who",
    ["anonymous", "staff without permission", "forged token", "expired token", "other job token"],
)
def test_everyone_else_is_refused_without_seeing_the_job(client: Client, job, who):
    token = None
    if who == "staff without permission":
        client.force_login(staff_user(can_view=False))
    elif who == "forged token":
        token = forged_token(job.id)
    elif who == "expired token":
        token = aged_token(job.id, 2 * 24 * 3600)
    elif who == "other job token":
        token = job_token(quick_retry.enqueue(2).id)
    response = client.get(_url(job.id, token))
    assert response.status_code == 403
    assert "status" not in response.json()


def test_unknown_job_is_not_found_for_an_authorised_viewer(client: Client, db):
    missing = uuid7()
    assert client.get(_url(missing, job_token(missing))).status_code == 404
    assert client.get(_url(missing)).status_code == 403


def test_only_reads_are_allowed(client: Client, job):
    assert client.post(_url(job.id, job_token(job.id))).status_code == 405


def test_the_token_may_come_in_a_header_kept_out_of_access_logs(client: Client, job):
    response = client.get(_url(job.id), headers={"X-Leasequeue-Token": job_token(job.id)})
    assert response.status_code == 200 and response.json()["percent"] == 25


def test_a_signed_token_without_a_timestamp_is_a_403_not_a_500(client: Client, job):
    from django.core import signing

    from django_leasequeue.progress import access

    untimed = signing.Signer(salt=access._SALT).sign(str(job.id))
    assert client.get(_url(job.id, untimed)).status_code == 403
