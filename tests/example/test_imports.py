"""The demo site's import workflow: who may start and watch it, and what it enqueues."""

import uuid

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from django_leasequeue.models import Job, StepDependency, WorkflowRun
from django_leasequeue.operations import cancel_workflow
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.executor import execute
from example_project.matching.imports import NAME, SOURCES
from example_project.matching.models import ImportRun
from tests.example.demo_site import demo_urls
from tests.support.helpers import claim_one, run_in_threads

pytestmark = pytest.mark.django_db


def _start(client) -> WorkflowRun:
    response = client.post("/imports/")
    assert response.status_code == 302
    workflow = WorkflowRun.objects.get()
    assert response["Location"] == f"/imports/{workflow.pk}/"
    return workflow


@demo_urls
def test_starting_an_import_needs_a_signed_in_user_and_a_post(client, signed_in):
    assert client.get("/imports/").status_code == 405
    signed_in.logout()
    assert signed_in.post("/imports/").status_code == 302
    assert not WorkflowRun.objects.exists()


@demo_urls
def test_an_import_fetches_three_sources_side_by_side_then_merges_then_reports(signed_in):
    workflow = _start(signed_in)
    assert (workflow.name, workflow.steps_total) == (NAME, 5)
    steps = {job.step_name: job for job in Job.objects.filter(workflow=workflow)}
    fetches = ["fetch_source", "fetch_source_2", "fetch_source_3"]
    assert {name: steps[name].status for name in fetches} == dict.fromkeys(fetches, "queued")
    assert [steps[name].args for name in fetches] == [list(item) for item in SOURCES.items()]
    merge, report = steps["merge_sources"], steps["report_import"]
    assert (merge.status, merge.upstream, report.upstream) == ("waiting", "chord", "chain")
    parents = StepDependency.objects.filter(child=merge).order_by("position")
    assert [edge.parent.step_name for edge in parents] == fetches


@demo_urls
def test_the_import_page_draws_the_workflow_s_bar_and_one_per_step(signed_in):
    workflow = _start(signed_in)
    html = signed_in.get(f"/imports/{workflow.pk}/").content.decode()
    assert f'data-websocket-path="/ws/leasequeue/workflows/{workflow.pk}/"' in html
    assert "0 of 5 steps finished" in html
    assert html.count('<div class="leasequeue-progress"') == 1 + 5
    assert "in the admin" not in html  # not staff


@demo_urls
def test_staff_who_may_see_workflows_get_a_link_to_the_graph(signed_in, user):
    user.is_staff = True
    user.save()
    user.user_permissions.add(Permission.objects.get(codename="view_workflowrun"))
    workflow = _start(signed_in)
    html = signed_in.get(f"/imports/{workflow.pk}/").content.decode()
    assert f"/admin/leasequeue/workflowrun/{workflow.pk}/change/" in html


@demo_urls
def test_only_the_user_who_started_an_import_sees_it(signed_in, client):
    workflow = _start(signed_in)
    other = get_user_model().objects.create_user("bob", password="secret")
    signed_in.force_login(other)  # a new session
    assert signed_in.get(f"/imports/{workflow.pk}/").status_code == 404
    assert signed_in.get(f"/imports/{workflow.pk}/result.json").status_code == 404
    assert signed_in.get(f"/imports/{uuid.uuid4()}/").status_code == 404


@demo_urls
def test_the_result_carries_the_report_once_written(signed_in):
    workflow = _start(signed_in)
    assert signed_in.get(f"/imports/{workflow.pk}/result.json").json() == {
        "status": "running",
        "report": "",
    }
    report = Job.objects.get(workflow=workflow, step_name="report_import")
    Job.objects.filter(pk=report.pk).update(status="queued")
    claimed = claim_one(report.pk, "w-demo")
    assert execute(jobs_sql.complete(claimed.lease, "Imported 375 records."))
    result = signed_in.get(f"/imports/{workflow.pk}/result.json").json()
    assert result["report"] == "Imported 375 records."
    home = signed_in.get("/").content.decode()
    assert f'href="/imports/{workflow.pk}/"' in home


# The per-user cap on running imports


def _import_ids(user) -> list:
    return list(ImportRun.objects.filter(user=user).values_list("workflow_id", flat=True))


@demo_urls
def test_past_its_cap_of_running_imports_a_user_is_refused_with_429_and_told_why(
    signed_in, user, settings
):
    """One user started 30 workflows (150 jobs) in 0.9 s: now at most two run at once per user;
    the third is refused, saying why, until one of the two has finished. Others are not held."""
    settings.MATCHING_MAX_RUNNING_IMPORTS = 2
    assert [signed_in.post("/imports/").status_code for _ in range(2)] == [302, 302]
    refused = signed_in.post("/imports/")
    assert refused.status_code == 429
    page = refused.content.decode()
    assert "You have 2 import(s) running; at most 2 may run at once." in page
    assert "At most 2 of your imports may run at once" in page
    assert WorkflowRun.objects.count() == 2 and Job.objects.count() == 10

    bob = get_user_model().objects.create_user("bob", password="secret")
    signed_in.force_login(bob)
    assert signed_in.post("/imports/").status_code == 302
    signed_in.force_login(user)

    first = _import_ids(user)[-1]
    cancel_workflow(first, "default")
    assert WorkflowRun.objects.get(pk=first).status == "cancelled"
    assert signed_in.post("/imports/").status_code == 302
    assert len(_import_ids(user)) == 3


@demo_urls
@pytest.mark.django_db(transaction=True)
def test_posts_at_the_same_moment_cannot_both_pass_the_cap(user, settings):
    """Four posts at once (a script, a double click): the user's row is locked while counting,
    so exactly the cap's worth start."""
    settings.MATCHING_MAX_RUNNING_IMPORTS = 1
    clients = [Client() for _ in range(4)]
    for client in clients:
        client.force_login(user)
    statuses = run_in_threads(4, lambda i: clients[i].post("/imports/").status_code)
    assert sorted(statuses) == [302, 429, 429, 429]
    assert WorkflowRun.objects.count() == 1 and len(_import_ids(user)) == 1
