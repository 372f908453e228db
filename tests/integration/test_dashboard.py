"""The dashboard page and its JSON through the test client: who may see them, what they refuse,
and that the page carries its charts (server-rendered SVG, a title on every point)."""

import re
from datetime import datetime, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from django_leasequeue.history.series import WINDOWS
from django_leasequeue.models import Job
from tests.support.settings import TASKS

pytestmark = pytest.mark.django_db

URL = reverse("admin:leasequeue_job_dashboard")
DECLARED = TASKS["default"]["QUEUES"]


def _finished(queue: str, status: str, ago: timedelta) -> None:
    finished_at = timezone.now() - ago
    Job.objects.create(
        task_path="tests.support.tasks.basic.add",
        queue_name=queue,
        status=status,
        run_after=finished_at - timedelta(seconds=1),
        started_at=finished_at - timedelta(milliseconds=300),
        last_attempted_at=finished_at - timedelta(milliseconds=300),
        finished_at=finished_at,
        attempt=1,
    )


def test_staff_without_the_job_view_permission_get_403_on_the_page_and_the_json(staff_client):
    client = staff_client("view_worker", "view_workflowrun")
    assert client.get(URL).status_code == 403
    assert client.get(URL, {"format": "json"}).status_code == 403
    assert client.get(URL, {"window": "7d", "format": "json"}).status_code == 403


def test_anyone_not_signed_in_is_sent_to_the_login(client):
    response = client.get(URL, {"format": "json"})
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def test_the_json_has_every_queue_and_the_documented_shape(staff_client):
    _finished("emails", "succeeded", timedelta(seconds=1))
    _finished("emails", "failed", timedelta(seconds=1))
    answer = staff_client("view_job").get(URL, {"format": "json", "window": "24h"}).json()
    assert answer["window"] == "24h"
    assert set(answer["queues"]) == {*DECLARED, "emails"}
    emails = answer["queues"]["emails"]
    assert [len(emails[key]) for key in ("finished", "backlog", "pickup_ms", "run_ms")] == [96] * 4
    newest = emails["finished"][-1]
    assert (newest["succeeded"], newest["failed"]) == (1, 1)
    datetime.fromisoformat(newest["t"])
    assert set(emails["backlog"][-1]) == {"t", "count", "estimated"}
    assert set(emails["pickup_ms"][-1]) == {"t", "p50", "p95"}
    assert emails["run_ms"][-1]["p50"] == pytest.approx(300, rel=0.1)
    assert emails["run_ms"][0] == {"t": emails["run_ms"][0]["t"], "p50": None, "p95": None}


def test_the_page_draws_each_queues_charts_with_a_title_on_every_point(staff_client):
    _finished("emails", "succeeded", timedelta(minutes=3))
    response = staff_client("view_job").get(URL)
    assert response.status_code == 200
    page = response.content.decode()
    queues = re.findall(r'<section class="lq-queue" data-queue="([^"]+)"', page)
    assert queues == sorted({*DECLARED, "emails"})
    points = WINDOWS["1h"].points
    assert page.count('<rect class="lq-point"') == len(queues) * 4 * points
    assert page.count("</title></rect>") == len(queues) * 4 * points
    assert re.search(r"<title>\d\d:\d\d: 1 succeeded, 0 failed</title>", page)
    assert re.search(r"<title>\d\d:\d\d: p50 3\d\d ms, p95 3\d\d ms</title>", page)
    # The legend names what each colour stands for.
    for label in ("succeeded", "failed", "due, not started", "p50", "p95"):
        assert f'">{label}</span>' in page


@pytest.mark.parametrize(
    "query",
    [{"window": "2h"}, {"window": ""}, {"format": "xml"}, {"queue": "emails"}, {"page": "2"}],
)
def test_a_parameter_the_page_does_not_offer_is_refused(staff_client, query):
    response = staff_client("view_job").get(URL, query)
    assert response.status_code == 400
    assert response.content


def test_the_page_only_answers_gets(staff_client):
    assert staff_client("view_job").post(URL).status_code == 405


def test_the_job_list_links_to_the_dashboard(staff_client):
    page = staff_client("view_job").get(reverse("admin:leasequeue_job_changelist"))
    assert f'href="{URL}"' in page.content.decode()
