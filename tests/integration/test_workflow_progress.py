"""A workflow's live bar: its state (steps finished, running steps in part), the JSON view, the
websocket, the template tag and who may watch, over the real channels-redis layer."""

import asyncio
import dataclasses
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission, User
from django.template import Context, Template
from django.test import Client
from django.urls import path, reverse

from django_leasequeue import Workflow
from django_leasequeue import progress_events as events
from django_leasequeue.operations import cancel_workflow
from django_leasequeue.progress.access import job_token, token_allows, workflow_token
from django_leasequeue.progress.consumers import (
    CLOSE_FORBIDDEN,
    CLOSE_NOT_FOUND,
    WorkflowProgressConsumer,
)
from django_leasequeue.progress.workflow_state import load_workflow_state
from django_leasequeue.runtime.watch import ViewerWatch
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.executor import execute
from django_leasequeue.workflows.handle import WorkflowHandle
from tests.support.asgi import application
from tests.support.helpers import claim_one, running_handle
from tests.support.tasks.workflows import fetch, length, noop
from tests.support.viewers import session_cookie

pytestmark = pytest.mark.django_db(transaction=True)

_execute = database_sync_to_async(execute)


@dataclasses.dataclass
class Running:
    """A workflow of four steps: two roots, ``both`` after them, ``last`` after that."""

    handle: WorkflowHandle
    steps: dict[str, uuid.UUID]

    @property
    def id(self) -> str:
        return self.handle.id


@pytest.fixture
def workflow(backend) -> Running:
    wf = Workflow("nightly import")
    a = wf.add(fetch, args=["a"], name="a")
    b = wf.add(fetch, args=["b"], name="b")
    both = wf.add(length, args=["ab"], after=[a, b], name="both")
    wf.add(noop, after=[both], name="last")
    handle = wf.enqueue()
    return Running(handle, {name: uuid.UUID(i) for name, i in handle.step_ids.items()})


def _staff(*codenames: str, username: str = "staff") -> User:
    user = User.objects.create_user(username, password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return user


def _socket(workflow_id, *, token=None, cookie=None, app=application) -> WebsocketCommunicator:
    query = f"?token={token}" if token else ""
    headers = [(b"cookie", cookie)] if cookie else []
    return WebsocketCommunicator(
        app, f"/ws/leasequeue/workflows/{workflow_id}/{query}", headers=headers
    )


async def _receive_until(socket: WebsocketCommunicator, wanted, timeout: float = 5.0) -> dict:
    """The first message ``wanted`` accepts (the periodic check may send others before)."""
    async with asyncio.timeout(timeout):
        while True:
            message = await socket.receive_json_from(timeout=timeout)
            if wanted(message):
                return message


# The state


def test_finished_steps_count_whole_and_running_ones_by_their_own_progress(workflow):
    a = claim_one(workflow.steps["a"], "w1")
    assert execute(jobs_sql.complete(a.lease, "page"))
    b = claim_one(workflow.steps["b"], "w1")
    assert execute(jobs_sql.progress(b.lease, 5, 10, "half"))
    state = load_workflow_state(workflow.id)
    assert state["status"] == "running"
    assert (state["current"], state["total"], state["percent"]) == (1.5, 4, 37)
    assert (state["steps_finished"], state["steps_running"], state["final"]) == (1, 1, False)
    assert state["message"] == "1 of 4 steps finished, 1 running"


def test_a_failed_step_ends_the_workflow_failed_with_its_downstream_cancelled(workflow):
    a = claim_one(workflow.steps["a"], "w1")
    assert execute(
        jobs_sql.fail(
            a.lease,
            exception_class_path="builtins.OSError",
            message="down",
            traceback="",
            retryable=False,
            backoff_cap_seconds=1,
        )
    )
    b = claim_one(workflow.steps["b"], "w1")
    assert execute(jobs_sql.complete(b.lease, "page"))
    state = load_workflow_state(workflow.id)
    # "both" and "last" were cancelled by the trigger: every step has finished.
    assert (state["status"], state["final"], state["percent"]) == ("failed", True, 100)
    assert state["message"] == "4 of 4 steps finished, 3 failed or cancelled"


def test_an_unknown_workflow_has_no_state(db):
    assert load_workflow_state(uuid.uuid4()) is None


# The JSON view


def _status_url(workflow_id) -> str:
    return reverse("leasequeue:workflow-status", args=[workflow_id])


def test_the_json_view_serves_staff_with_the_workflow_view_permission(workflow):
    client = Client()
    client.force_login(_staff("view_workflowrun"))
    response = client.get(_status_url(workflow.id))
    assert response.status_code == 200
    assert response.json()["message"] == "0 of 4 steps finished"
    assert response["Cache-Control"].startswith("max-age=0")


def test_the_json_view_serves_a_token_for_this_workflow_only(workflow, backend):
    url = _status_url(workflow.id)
    served = Client().get(url, headers={"X-Leasequeue-Token": workflow_token(workflow.id)})
    assert served.status_code == 200 and served.json()["workflow_id"] == workflow.id
    other = Workflow().add(noop).workflow.enqueue()
    refused = [
        workflow_token(other.id),  # another workflow's
        job_token(workflow.id),  # a job token signing this id: a job's, not a workflow's
        "garbage",
        "",
    ]
    for token in refused:
        assert Client().get(url, headers={"X-Leasequeue-Token": token}).status_code == 403


def test_the_json_view_refuses_staff_who_may_only_view_jobs(workflow):
    client = Client()
    client.force_login(_staff("view_job"))
    assert client.get(_status_url(workflow.id)).status_code == 403


def test_the_json_view_refuses_before_saying_whether_a_workflow_exists(db):
    missing = uuid.uuid4()
    assert Client().get(_status_url(missing)).status_code == 403
    token = workflow_token(missing)
    assert Client().get(_status_url(missing), {"token": token}).status_code == 404


def test_workflow_and_job_tokens_are_not_interchangeable():
    some_id = uuid.uuid4()
    assert token_allows(workflow_token(some_id), some_id, "workflow")
    assert not token_allows(workflow_token(some_id), some_id)
    assert not token_allows(job_token(some_id), some_id, "workflow")


# The template tag


def _render(value) -> str:
    template = Template("{% load leasequeue %}{% leasequeue_progress value %}")
    return template.render(Context({"value": value}))


@pytest.mark.parametrize("given", ["handle", "id", "uuid"])
def test_the_tag_draws_one_bar_for_a_whole_workflow(workflow, given):
    a = claim_one(workflow.steps["a"], "w1")
    assert execute(jobs_sql.complete(a.lease, "page"))
    value = {
        "handle": workflow.handle,
        "id": workflow.id,
        "uuid": uuid.UUID(workflow.id),
    }[given]
    html = _render(value)
    assert 'aria-valuenow="25"' in html and 'role="progressbar"' in html
    assert "Workflow progress" in html and "1 of 4 steps finished" in html
    assert f'data-status-url="{_status_url(workflow.id)}"' in html
    assert f'data-websocket-path="/ws/leasequeue/workflows/{workflow.id}/"' in html
    token = html.split('data-token="')[1].split('"')[0]
    assert token_allows(token, workflow.id, "workflow")
    assert not token_allows(token, workflow.id)


def test_the_tag_still_draws_a_job_given_a_step_id(workflow):
    html = _render(str(workflow.steps["a"]))
    assert f'data-status-url="/leasequeue/jobs/{workflow.steps["a"]}/status/"' in html
    assert "Job progress" in html


# The websocket


async def test_a_staff_viewer_gets_a_snapshot_then_the_state_after_each_step_event(workflow):
    cookie = await database_sync_to_async(session_cookie)(
        await database_sync_to_async(_staff)("view_workflowrun")
    )
    slow_checks = URLRouter(
        [
            path(
                "ws/leasequeue/workflows/<uuid:workflow_id>/",
                WorkflowProgressConsumer.as_asgi(recheck_seconds=60),
            )
        ]
    )
    socket = _socket(workflow.id, cookie=cookie, app=AuthMiddlewareStack(slow_checks))
    assert await socket.connect() == (True, None)
    snapshot = await socket.receive_json_from(timeout=3)
    assert (snapshot["kind"], snapshot["status"], snapshot["percent"]) == (
        "snapshot",
        "running",
        0,
    )
    await asyncio.sleep(1.7)  # past the early checks: what comes next is the event's doing
    # Nothing changed: the early checks sent nothing the page already had.
    assert await socket.receive_nothing(timeout=0.3)

    a = await database_sync_to_async(claim_one)(workflow.steps["a"], "w1")
    assert await _execute(jobs_sql.progress(a.lease, 3, 4, "three quarters"))
    await events.apublish_workflow(workflow.id, {"kind": "progress", "current": 3, "total": 4})
    state = await socket.receive_json_from(timeout=3)
    assert (state["kind"], state["current"], state["percent"]) == ("state", 0.75, 18)
    assert state["message"] == "0 of 4 steps finished, 1 running"
    await socket.disconnect()


async def test_many_step_events_are_read_as_few_states(workflow):
    socket = _socket(workflow.id, token=workflow_token(workflow.id))
    assert (await socket.connect())[0]
    assert (await socket.receive_json_from(timeout=3))["kind"] == "snapshot"
    a = await database_sync_to_async(claim_one)(workflow.steps["a"], "w1")
    started = time.monotonic()
    for current in range(1, 51):
        assert await _execute(jobs_sql.progress(a.lease, current, 100, "reading"))
        await events.apublish_workflow(workflow.id, {"kind": "progress"})
    await asyncio.sleep(0.6)
    elapsed = time.monotonic() - started
    states = []
    while not await socket.receive_nothing(timeout=0.3):
        states.append(await socket.receive_json_from())
    # A read at most every 0.25 s however long the 50 events took to send (a loaded machine
    # is slow to send them), so far fewer reads than events; the last has the last report.
    assert 1 <= len(states) <= min(elapsed / 0.25 + 2, 25), (len(states), elapsed)
    assert (states[-1]["kind"], states[-1]["current"]) == ("state", 0.5)
    await socket.disconnect()


async def test_the_viewer_gets_the_final_state_when_the_last_step_ends(workflow):
    socket = _socket(workflow.id, token=workflow_token(workflow.id))
    assert (await socket.connect())[0]
    assert (await socket.receive_json_from(timeout=3))["kind"] == "snapshot"

    def run_every_step() -> None:
        for name in ("a", "b", "both", "last"):
            claimed = claim_one(workflow.steps[name], "w1")
            assert execute(jobs_sql.complete(claimed.lease, 1))

    await database_sync_to_async(run_every_step)()
    await events.apublish_workflow(workflow.id, {"kind": "status", "status": "succeeded"})
    final = await _receive_until(socket, lambda message: message["kind"] == "final")
    assert (final["status"], final["percent"], final["final"]) == ("succeeded", 100, True)
    assert final["message"] == "4 of 4 steps finished"
    message = await socket.receive_output(timeout=3)
    assert message["type"] == "websocket.close"
    await socket.disconnect()


async def test_a_cancel_from_an_operator_reaches_the_viewer(workflow, backend):
    socket = _socket(workflow.id, token=workflow_token(workflow.id))
    assert (await socket.connect())[0]
    assert (await socket.receive_json_from(timeout=3))["kind"] == "snapshot"
    await database_sync_to_async(cancel_workflow)(workflow.id, "default")
    final = await _receive_until(socket, lambda message: message["kind"] == "final", timeout=2)
    assert (final["status"], final["final"]) == ("cancelled", True)
    await socket.disconnect()


async def test_viewers_without_permission_or_token_are_refused(workflow):
    job_viewer = await database_sync_to_async(_staff)("view_job")
    cookie = await database_sync_to_async(session_cookie)(job_viewer)
    assert (await _socket(workflow.id, cookie=cookie).connect()) == (False, CLOSE_FORBIDDEN)
    assert (await _socket(workflow.id).connect()) == (False, CLOSE_FORBIDDEN)
    job_kind = job_token(workflow.id)
    assert (await _socket(workflow.id, token=job_kind).connect()) == (False, CLOSE_FORBIDDEN)


async def test_an_unknown_workflow_is_refused_even_with_its_token(db):
    missing = uuid.uuid4()
    socket = _socket(missing, token=workflow_token(missing))
    assert (await socket.connect()) == (False, CLOSE_NOT_FOUND)


# The worker side


async def test_the_watch_sends_a_step_s_events_to_its_workflow_while_a_page_follows_it(
    backend, redis_client
):
    workflow_id = uuid.uuid4()
    step = running_handle(deadline=1e9)
    step.job = dataclasses.replace(step.job, workflow_id=workflow_id)
    plain = running_handle(deadline=1e9)
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(events.workflow_group_name(workflow_id), channel)
    backend.wakeups.join([backend.wakeups.watch_key(str(workflow_id))], "a-page", 60)
    redis_calls = ThreadPoolExecutor(1)
    watch = ViewerWatch(backend.wakeups, redis_calls, {h.job.id: h for h in (step, plain)})
    try:
        await watch.refresh()
    finally:
        redis_calls.shutdown()
    assert (step.workflow_watched, step.watched, plain.workflow_watched) == (True, False, False)
    # Newly followed: the step told the workflow's page where it stands.
    received = await asyncio.wait_for(layer.receive(channel), 3)
    assert received["event"] == {"kind": "status", "status": "running"}
    await step.publish({"kind": "status", "status": "succeeded"})
    received = await asyncio.wait_for(layer.receive(channel), 3)
    assert received["event"] == {"kind": "status", "status": "succeeded"}
    await layer.group_discard(events.workflow_group_name(workflow_id), channel)
