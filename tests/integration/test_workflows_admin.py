"""The Workflows admin through Django's test client: the list and its counts, a workflow's
graph and steps, Cancel and Retry failed steps with their permissions, and a step's place in
its workflow on its job's page. Real PostgreSQL and Redis."""

import re
import uuid
import xml.etree.ElementTree as ET

import pytest
from django.contrib.admin.models import LogEntry
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from django_leasequeue import Workflow, chord, group, step
from django_leasequeue.admin.workflow_page import GRAPH_STEP_LIMIT
from django_leasequeue.models import Job, WorkflowRun
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.executor import execute
from django_leasequeue.workflows.handle import WorkflowHandle
from tests.support.helpers import claim_one
from tests.support.tasks.basic import add
from tests.support.tasks.workflows import collect, fetch, length, noop, report, total

pytestmark = pytest.mark.django_db(transaction=True)

CHANGELIST = reverse("admin:leasequeue_workflowrun_changelist")
JOBS = reverse("admin:leasequeue_job_changelist")
SVG = "{http://www.w3.org/2000/svg}"


def page_url(workflow_id) -> str:
    return reverse("admin:leasequeue_workflowrun_change", args=[workflow_id])


def job_url(job_id) -> str:
    return reverse("admin:leasequeue_job_change", args=[job_id])


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def _run(job_id, result="ok") -> None:
    claimed = claim_one(job_id, "w-admin")
    assert execute(jobs_sql.complete(claimed.lease, result))


def _fail(job_id) -> None:
    claimed = claim_one(job_id, "w-admin")
    assert execute(
        jobs_sql.fail(
            claimed.lease,
            exception_class_path="builtins.OSError",
            message="unreachable",
            traceback="",
            retryable=False,
            backoff_cap_seconds=1,
        )
    )


def _chord(name: str = "import") -> WorkflowHandle:
    """fetch, fetch_2, fetch_3 side by side, then total, then an on_success callback."""
    wf = chord(group(*(step(length, text) for text in ("a", "bb", "ccc"))), step(total))
    wf.name = name
    wf.on_success(collect, args=[[]])
    return wf.enqueue()


def _svg(html: str) -> ET.Element:
    return ET.fromstring(re.search(r'<svg [^>]*class="lq-graph".*?</svg>', html, re.S).group(0))


# The list


def test_the_list_shows_each_workflow_with_its_steps_counted_by_status(admin_client):
    busy = _chord("busy import")
    _run(busy.step_ids["length"], 1)
    claim_one(busy.step_ids["length_2"], "w-admin")  # running
    failed = Workflow("doomed")
    failed.add(fetch, args=["x"], name="only")
    doomed = failed.enqueue()
    _fail(doomed.step_ids["only"])

    response = admin_client.get(CHANGELIST)
    assert response.status_code == 200
    rows = {str(w): w for w in response.context["cl"].result_list}
    assert set(rows) == {"busy import", "doomed"}
    html = response.content.decode()
    assert "▶</span> Running" in html and "✖</span> Failed" in html
    assert '<progress max="5" value="1"' in html and "1 / 5" in html
    busy_row = re.search(r"<tr>.*?busy import.*?</tr>", html, re.S).group(0)
    cells = re.findall(r'<td class="field-(\w+)[^"]*">(.*?)</td>', busy_row, re.S)
    counts = {name: value for name, value in cells if name.endswith("_count")}
    assert counts == {"running_count": "1", "waiting_count": "3", "failed_count": "0"}
    assert "lq-expired" in re.search(r"<tr>.*?doomed.*?</tr>", html, re.S).group(0)


def test_the_list_filters_by_status_and_finds_by_id_or_name(admin_client):
    running = _chord("nightly import")
    finished = Workflow("cleanup")
    finished.add(noop, name="sweep")
    done = finished.enqueue()
    _run(done.step_ids["sweep"])

    def listed(query: str) -> set[str]:
        response = admin_client.get(CHANGELIST + query)
        assert response.status_code == 200
        return {str(w.pk) for w in response.context["cl"].result_list}

    assert listed("?status__exact=succeeded") == {done.id}
    assert listed("?status__exact=running") == {running.id}
    assert listed(f"?q={running.id}") == {running.id}
    assert listed("?q=NIGHTLY") == {running.id}
    # Django's search form refuses a NUL (PostgreSQL text cannot hold one) with a message.
    assert listed("?q=%00") == {running.id, done.id}


def test_the_list_costs_the_same_queries_for_3_or_30_workflows(admin_client):
    def queries_for_list() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert admin_client.get(CHANGELIST).status_code == 200
        return len(queries.captured_queries)

    for _ in range(3):
        claim_one(_chord().step_ids["length"], "w-admin")
    few = queries_for_list()
    for _ in range(27):
        claim_one(_chord().step_ids["length"], "w-admin")
    assert queries_for_list() == few


def test_a_huge_workflow_is_listed_and_summarised_without_drawing_its_steps(admin_client):
    steps = 10_000
    huge = Workflow("huge")
    for i in range(steps):  # named: the builder's default names are slow to number by the 10,000
        huge.add(length, args=["x"], name=f"part_{i}")
    huge.on_success(total, args=[[]])
    handle = huge.enqueue()
    _run(handle.step_ids["part_0"], 1)
    _fail(handle.step_ids["part_1"])
    claim_one(handle.step_ids["part_2"], "w-admin")

    with CaptureQueriesContext(connection) as queries:
        listing = admin_client.get(CHANGELIST)
    assert listing.status_code == 200
    assert "2 / 10001" in listing.content.decode()
    # The step counts come from the workflow row; only the running steps are counted.
    step_reads = [q["sql"] for q in queries.captured_queries if '"leasequeue_job"' in q["sql"]]
    assert len(step_reads) == 1 and "'running'" in step_reads[0]

    page = admin_client.get(page_url(handle.id))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'class="lq-graph"' not in html and 'data-step="' not in html
    assert f"the graph is drawn up to {GRAPH_STEP_LIMIT} steps" in html
    counts = {row["url"].rsplit("=", 1)[1]: row["count"] for row in page.context["step_counts"]}
    assert counts == {
        "waiting": 1,
        "queued": steps - 3,
        "running": 1,
        "succeeded": 1,
        "failed": 1,
    }
    assert f"?workflow={handle.id}&amp;status__exact=failed" in html


# A workflow's page


def test_the_graph_draws_every_step_as_a_link_in_its_status_with_its_arrows(admin_client):
    handle = _chord()
    _run(handle.step_ids["length"], 1)
    _fail(handle.step_ids["length_2"])
    claim_one(handle.step_ids["length_3"], "w-admin")

    response = admin_client.get(page_url(handle.id))
    assert response.status_code == 200
    svg = _svg(response.content.decode())
    nodes = {node.get("data-step"): node for node in svg.iter(f"{SVG}a")}
    assert set(nodes) == {"length", "length_2", "length_3", "total", "on_success"}
    for name, node in nodes.items():
        assert node.get("href") == job_url(handle.step_ids[name])
        assert node.find(f"{SVG}rect") is not None
    statuses = {name: node.get("class").split("lq-node-")[1] for name, node in nodes.items()}
    assert statuses == {
        "length": "succeeded",
        "length_2": "failed",
        "length_3": "running",
        # Still waiting: length_3 has not finished.
        "total": "waiting",
        "on_success": "waiting",
    }
    assert nodes["length_2"].get("aria-label") == "length_2: Failed"
    assert "".join(nodes["length_2"].find(f"{SVG}text").itertext()) == "✖ length_2"
    # Three into the chord's callback, one from it to the workflow's callback (the other
    # dependencies of a callback are implied); dashed where the step still waits for that one.
    arrows = svg.findall(f"{SVG}g[@class='lq-arrows']/{SVG}path")
    assert sorted(a.get("class") for a in arrows) == [
        "lq-arrow",
        "lq-arrow",
        "lq-arrow lq-arrow-waiting",
        "lq-arrow lq-arrow-waiting",
    ]
    assert svg.get("role") == "group" and svg.get("aria-label").startswith("Graph of workflow")


def test_the_step_table_lists_each_step_with_what_it_waits_for(admin_client):
    handle = _chord("tabled")
    response = admin_client.get(page_url(handle.id))
    html = response.content.decode()
    rows = {row["name"]: row for row in response.context["steps"]}
    assert list(rows)[:3] == ["length", "length_2", "length_3"]  # the graph's order
    assert rows["total"]["upstream"] == "length, length_2, length_3"
    assert rows["on_success"]["upstream"] == "length, length_2, length_3, total"
    assert rows["on_success"]["run_if"] == "the workflow succeeded"
    assert f'<a href="{job_url(handle.step_ids["total"])}">total</a>' in html
    assert f"{JOBS}?workflow={handle.id}" in html
    # The live bar of the whole workflow, for staff.
    assert f'data-status-url="/leasequeue/workflows/{handle.id}/status/"' in html
    assert "0 of 5 steps finished" in html


def test_the_page_needs_the_workflow_view_permission(staff_client):
    handle = _chord()
    job_viewer = staff_client("view_job")
    assert job_viewer.get(page_url(handle.id)).status_code == 403
    assert job_viewer.get(CHANGELIST).status_code == 403
    assert staff_client("view_workflowrun").get(page_url(handle.id)).status_code == 200


def test_nothing_on_a_workflow_s_page_can_be_saved_or_deleted(admin_client):
    handle = _chord()
    response = admin_client.get(page_url(handle.id))
    assert 'name="_save"' not in response.content.decode()
    assert admin_client.post(page_url(handle.id), {"name": "renamed"}).status_code == 403
    delete = reverse("admin:leasequeue_workflowrun_delete", args=[handle.id])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    assert WorkflowRun.objects.get(pk=handle.id).name == "import"


# Cancel and Retry failed steps


def _buttons(response) -> set[str]:
    return {button["name"] for button in response.context["workflow_buttons"]}


def test_staff_without_the_permissions_see_no_button_and_are_refused(staff_client):
    handle = _chord()
    _fail(handle.step_ids["length"])
    viewer = staff_client("view_workflowrun")
    page = viewer.get(page_url(handle.id))
    assert _buttons(page) == set()
    assert "lq-action-cancel" not in page.content.decode()

    cancel = reverse("admin:leasequeue_workflowrun_cancel", args=[handle.id])
    retry = reverse("admin:leasequeue_workflowrun_retry", args=[handle.id])
    for url in (cancel, retry):
        refused = viewer.post(url, follow=True)
        assert refused.redirect_chain == [(page_url(handle.id), 302)]
        assert "which you do not have" in messages_of(refused)[0]
    assert "which you do not have" in messages_of(viewer.get(cancel, follow=True))[0]
    assert WorkflowRun.objects.get(pk=handle.id).cancel_requested is False
    assert Job.objects.get(pk=handle.step_ids["length"]).status == "failed"
    assert Job.objects.get(pk=handle.step_ids["length_2"]).status == "queued"


def test_cancel_asks_first_then_cancels_the_steps_and_stops_the_running_ones(staff_client):
    handle = _chord()
    _run(handle.step_ids["length"], 1)
    claim_one(handle.step_ids["length_2"], "w-admin")
    operator = staff_client("view_workflowrun", "cancel_workflow")
    assert _buttons(operator.get(page_url(handle.id))) == {"cancel"}

    cancel = reverse("admin:leasequeue_workflowrun_cancel", args=[handle.id])
    confirm = operator.get(cancel)
    assert confirm.status_code == 200 and "Yes, cancel the workflow" in confirm.content.decode()
    assert Job.objects.get(pk=handle.step_ids["length_3"]).status == "queued"

    done = operator.post(cancel, follow=True)
    assert messages_of(done) == [
        "Workflow cancelled: 3 steps cancelled, 1 running step asked to stop."
    ]
    statuses = dict(Job.objects.filter(workflow_id=handle.id).values_list("step_name", "status"))
    assert statuses == {
        "length": "succeeded",
        "length_2": "running",
        "length_3": "cancelled",
        "total": "cancelled",
        "on_success": "cancelled",
    }
    assert Job.objects.get(pk=handle.step_ids["length_2"]).cancel_requested
    assert LogEntry.objects.get(object_id=handle.id).change_message.startswith("Workflow cancel")
    again = operator.post(cancel, follow=True)
    assert messages_of(again) == [
        "Workflow cancelled: 0 steps cancelled, 0 running steps asked to stop."
    ]


def test_cancelling_an_ended_workflow_changes_nothing(admin_client):
    wf = Workflow("short")
    wf.add(noop, name="only")
    handle = wf.enqueue()
    _run(handle.step_ids["only"])
    cancel = reverse("admin:leasequeue_workflowrun_cancel", args=[handle.id])
    response = admin_client.post(cancel, follow=True)
    assert messages_of(response) == [
        "This workflow has already ended (Succeeded): nothing to cancel."
    ]
    assert WorkflowRun.objects.get(pk=handle.id).status == "succeeded"


def test_retry_failed_steps_queues_them_and_revives_what_they_cancelled(staff_client):
    handle = _chord()
    _run(handle.step_ids["length"], 1)
    _fail(handle.step_ids["length_2"])
    _run(handle.step_ids["length_3"], 3)
    assert WorkflowRun.objects.get(pk=handle.id).status == "failed"
    operator = staff_client("view_workflowrun", "retry_workflow")
    assert _buttons(operator.get(page_url(handle.id))) == {"retry"}
    retry = reverse("admin:leasequeue_workflowrun_retry", args=[handle.id])
    assert operator.get(retry).status_code == 405

    done = operator.post(retry, follow=True)
    assert messages_of(done) == ["Retry failed steps: 1 job retried."]
    statuses = dict(Job.objects.filter(workflow_id=handle.id).values_list("step_name", "status"))
    assert statuses["length_2"] == "queued"
    assert (statuses["total"], statuses["on_success"]) == ("waiting", "waiting")
    assert WorkflowRun.objects.get(pk=handle.id).status == "running"
    assert _buttons(operator.get(page_url(handle.id))) == set()  # nothing failed now


# A step's job page


def test_a_step_s_job_page_links_its_workflow_and_its_neighbours(admin_client):
    handle = _chord("linked")
    response = admin_client.get(job_url(handle.step_ids["total"]))
    assert response.status_code == 200
    html = response.content.decode()
    assert f'<a href="{page_url(handle.id)}">linked</a>' in html
    for upstream in ("length", "length_2", "length_3"):
        assert f'<a href="{job_url(handle.step_ids[upstream])}">{upstream}</a>' in html
    assert f'<a href="{job_url(handle.step_ids["on_success"])}">on_success</a>' in html
    assert "◌</span> Waiting" in html  # a waiting step has its own badge

    plain = admin_client.get(job_url(add.enqueue(1, 2).id)).content.decode()
    assert "After (upstream)" in html and "After (upstream)" not in plain


def test_a_step_with_thousands_of_neighbours_lists_the_first_and_counts_the_rest(admin_client):
    wf = Workflow("wide")
    roots = [wf.add(noop, name=f"part_{i}") for i in range(30)]
    wf.add(report, after=roots, name="sum")
    handle = wf.enqueue()
    html = admin_client.get(job_url(handle.step_ids["sum"])).content.decode()
    assert html.count('class="lq-status lq-status-queued"') == 20
    assert "and 10 more" in html


def test_the_job_list_shows_one_workflow_s_steps(admin_client):
    handle = _chord()
    add.enqueue(1, 2)

    def listed(query: str) -> set[str]:
        response = admin_client.get(JOBS + query)
        assert response.status_code == 200
        return {str(job.pk) for job in response.context["cl"].result_list}

    assert listed(f"?workflow={handle.id}") == set(handle.step_ids.values())
    assert listed(f"?workflow={handle.id}&status__exact=waiting") == {
        handle.step_ids["total"],
        handle.step_ids["on_success"],
    }
    assert listed("?workflow=not-a-uuid") == set()
    assert listed(f"?workflow={uuid.uuid4()}") == set()


# What the list takes from its URL, and what the page counts


def test_the_page_counts_every_step_it_lists_callbacks_included(admin_client):
    mid_run = _chord("mid-run")
    _run(mid_run.step_ids["length"], 1)
    _fail(mid_run.step_ids["length_2"])
    claim_one(mid_run.step_ids["length_3"], "w-admin")
    html = admin_client.get(page_url(mid_run.id)).content.decode()
    assert (
        "2 of 5 finished: 1 succeeded, 1 failed, 0 cancelled; 1 running, 2 waiting, queued or "
        "retrying." in html
    )

    wf = Workflow("all good")
    wf.add(noop, name="first")
    wf.add(noop, name="second")
    wf.on_success(noop)
    wf.on_failure(noop)  # cancelled: no step failed
    handle = wf.enqueue()
    for name in ("first", "second", "on_success"):
        _run(handle.step_ids[name])
    response = admin_client.get(page_url(handle.id))
    statuses = {row["name"]: row["badge"] for row in response.context["steps"]}
    assert "Cancelled" in statuses["on_failure"]
    assert (
        "4 of 4 finished: 3 succeeded, 0 failed, 1 cancelled; 0 running, 0 waiting, queued or "
        "retrying." in response.content.decode()
    )


@pytest.mark.parametrize(
    "query",
    [
        "name__regex=^x",
        "steps_total__gt=100",
        "id__startswith=0",
        "created_at__year=2026",
        "status__in=failed,cancelled",
        "status__exact=fail%00ed",
        "anything=else",
    ],
)
def test_the_list_refuses_what_it_does_not_offer(admin_client, query):
    """Its filters, search, ordering and pagination only: any other lookup could make every
    page load scan the whole table, for anyone who may view workflows."""
    _chord()
    assert admin_client.get(f"{CHANGELIST}?{query}").status_code == 400


def test_the_list_takes_its_filters_search_ordering_and_pages_and_counts_no_facets(admin_client):
    handle = _chord("nightly")
    for query in ("status__exact=running", "status=running", "q=night", "o=-1", "o=7", "p=1"):
        response = admin_client.get(f"{CHANGELIST}?{query}")
        assert response.status_code == 200, query
        assert [str(w.pk) for w in response.context["cl"].result_list] == [handle.id]

    # Facet counts would count every filter choice over the whole table: not offered.
    def queries_for(query: str) -> int:
        with CaptureQueriesContext(connection) as queries:
            response = admin_client.get(f"{CHANGELIST}{query}")
        assert response.status_code == 200 and response.context["cl"].add_facets is False
        return len(queries.captured_queries)

    assert queries_for("?_facets=True") == queries_for("")
