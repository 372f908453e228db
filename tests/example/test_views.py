"""The demo site's page: sign-in required, the per-user cap, no duplicate jobs."""

import importlib

import pytest
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.test import override_settings

from django_leasequeue import JobStatus
from django_leasequeue.models import Job
from example_project.matching.models import MatchRequest, Project
from example_project.matching.submit import unique_key
from tests.example.demo_site import demo_urls

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("projects")]


@pytest.fixture
def projects():
    """The seeded projects (a flush by an earlier transactional test removes the seed)."""
    seed = importlib.import_module("example_project.matching.migrations.0002_seed_projects")
    for name, summary, skills, fails in seed.PROJECTS:
        Project.objects.get_or_create(
            name=name,
            defaults={"summary": summary, "skills": skills, "fails_first_attempt": fails},
        )


def project_ids(count: int) -> list[int]:
    return list(Project.objects.order_by("name").values_list("pk", flat=True)[:count])


def shown_messages(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def match_jobs(user) -> list[Job]:
    return list(Job.objects.filter(unique_key__startswith=f"match:{user.pk}:"))


@demo_urls
def test_the_page_needs_a_signed_in_user(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=/")
    assert client.post("/", {"projects": project_ids(1)}).status_code == 302
    assert not Job.objects.exists()
    assert client.get("/results.json").status_code == 302


@demo_urls
def test_submitting_creates_one_job_per_project_in_the_callers_name(signed_in, user):
    response = signed_in.post("/", {"projects": project_ids(3)}, follow=False)
    assert response.status_code == 302
    jobs = match_jobs(user)
    assert len(jobs) == 3
    assert {job.task_path for job in jobs} == {"example_project.matching.tasks.compute_match"}
    assert {tuple(job.args) for job in jobs} == {(user.pk, pk) for pk in project_ids(3)}
    assert MatchRequest.objects.filter(user=user).count() == 3


@demo_urls
def test_resubmitting_the_same_selection_creates_no_duplicates(signed_in, user):
    ids = project_ids(3)
    signed_in.post("/", {"projects": ids})
    first = {job.id for job in match_jobs(user)}
    response = signed_in.post("/", {"projects": ids})
    assert {job.id for job in match_jobs(user)} == first
    assert MatchRequest.objects.filter(user=user).count() == 3
    shown = shown_messages(response)
    assert any("already had an unfinished job" in m for m in shown), shown


@demo_urls
def test_a_finished_job_frees_its_key_for_a_new_run(signed_in, user):
    [pk] = project_ids(1)
    signed_in.post("/", {"projects": [pk]})
    Job.objects.filter(unique_key=unique_key(user.pk, pk)).update(status=JobStatus.SUCCEEDED)
    signed_in.post("/", {"projects": [pk]})
    assert len(match_jobs(user)) == 2


@demo_urls
@override_settings(MATCHING_MAX_UNFINISHED_JOBS=4)
def test_the_cap_on_unfinished_jobs_refuses_with_a_clear_message(signed_in, user):
    ids = project_ids(5)
    signed_in.post("/", {"projects": ids[:3]})
    response = signed_in.post("/", {"projects": ids[2:]})
    shown = shown_messages(response)
    assert shown[-1] == (
        "You have 3 unfinished job(s) and asked for 2 more; at most 4 may be unfinished at "
        "once. Wait for some to finish, or pick fewer projects."
    )
    assert "Started 2 match job(s)." not in shown
    assert len(match_jobs(user)) == 3  # nothing of the refused submission was enqueued


@demo_urls
def test_the_cap_counts_only_this_users_unfinished_jobs(signed_in, user):
    other = get_user_model().objects.create_user("bob", password="secret")
    signed_in.post("/", {"projects": project_ids(5)})
    signed_in.force_login(other)
    signed_in.post("/", {"projects": project_ids(5)})
    assert len(match_jobs(other)) == 5


@demo_urls
def test_more_than_five_projects_is_a_form_error(signed_in, user):
    response = signed_in.post("/", {"projects": project_ids(6)})
    assert response.status_code == 200
    assert "Pick at most 5 projects" in response.content.decode()
    assert not match_jobs(user)


@demo_urls
def test_results_json_lists_only_the_users_jobs(signed_in, user):
    signed_in.post("/", {"projects": project_ids(2)})
    other = get_user_model().objects.create_user("bob", password="secret")
    signed_in.force_login(other)
    assert signed_in.get("/results.json").json() == {"jobs": []}
    signed_in.force_login(user)
    jobs = signed_in.get("/results.json").json()["jobs"]
    assert [job["status"] for job in jobs] == ["queued", "queued"]


@demo_urls
def test_the_page_shows_a_progress_bar_per_job(signed_in, user):
    signed_in.post("/", {"projects": project_ids(2)})
    page = signed_in.get("/").content.decode()
    for job in match_jobs(user):
        assert str(job.id) in page
    assert "Jobs in the admin" in page


@demo_urls
def test_the_admin_link_goes_to_the_job_list(signed_in):
    page = signed_in.get("/").content.decode()
    assert '<a href="/admin/leasequeue/job/">Jobs in the admin' in page


@pytest.fixture
def request_ids(settings):
    """The demo's request ids: its middleware and its hook (example_project/settings.py)."""
    default = settings.TASKS["default"]
    hooks = ["example_project.matching.request_ids.RequestIdHook"]
    settings.TASKS = {"default": {**default, "OPTIONS": {**default["OPTIONS"], "hooks": hooks}}}
    settings.MIDDLEWARE = [
        *settings.MIDDLEWARE,
        "example_project.matching.request_ids.RequestIdMiddleware",
    ]


@demo_urls
def test_the_jobs_a_request_enqueues_carry_its_request_id(signed_in, request_ids):
    response = signed_in.post("/", {"projects": project_ids(2)}, HTTP_X_REQUEST_ID="req-42")
    assert response["X-Request-ID"] == "req-42"
    assert [job.meta for job in Job.objects.all()] == [{"request_id": "req-42"}] * 2
    signed_in.post("/", {"projects": project_ids(3)})  # a new id when the proxy sent none
    [new] = Job.objects.exclude(meta={"request_id": "req-42"})
    assert len(new.meta["request_id"]) == 32
