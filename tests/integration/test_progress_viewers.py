"""The count of a job's (and a workflow's) live viewers in Redis, which workers read to decide
whether to publish, and the cap on one token's websockets: driven through the real consumers
(Channels' communicator, the channels-redis layer) against the real Redis."""

import asyncio
import time
import uuid

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission
from django.db import connections

from django_leasequeue import Workflow
from django_leasequeue.progress import viewers
from django_leasequeue.progress.access import job_token, workflow_token
from django_leasequeue.progress.consumers import CLOSE_TOO_MANY
from django_leasequeue.progress.viewers import MAX_SOCKETS_PER_TOKEN, Viewer
from tests.support.asgi import application
from tests.support.helpers import claim_one
from tests.support.tasks.basic import quick_retry
from tests.support.tasks.workflows import noop
from tests.support.viewers import session_cookie, staff_user

pytestmark = pytest.mark.django_db(transaction=True)


def _socket(path: str, *, token: str | None = None, cookie: bytes | None = None):
    query = f"?token={token}" if token else ""
    headers = [(b"cookie", cookie)] if cookie else []
    return WebsocketCommunicator(application, f"{path}{query}", headers=headers)


def _viewers(backend, object_id) -> int:
    """What Redis holds for the object: the members of its viewer set."""
    return backend.wakeups.client().zcard(backend.wakeups.watch_key(str(object_id)))


@pytest.fixture(autouse=True)
async def _close_the_consumers_connections():
    """The consumers' database calls run in one thread, which keeps its connection open."""
    yield
    await sync_to_async(connections.close_all, thread_sensitive=True)()


@pytest.fixture
def running_job(backend):
    return claim_one(quick_retry.enqueue(1).id, "worker-a")


@pytest.fixture
def workflow_id(backend) -> str:
    workflow = Workflow("followed")
    workflow.add(noop)
    return workflow.enqueue().id


@pytest.fixture
def staff_cookie(db):
    """Staff who may see jobs and workflows."""
    user = staff_user(can_view=True)
    user.user_permissions.add(Permission.objects.get(codename="view_workflowrun"))
    return session_cookie(user)


async def test_one_admin_page_counts_one_viewer_while_open_and_none_after(
    backend, redis_client, running_job, staff_cookie
):
    socket = _socket(f"/ws/leasequeue/jobs/{running_job.id}/", cookie=staff_cookie)
    assert (await socket.connect())[0]
    assert (await socket.receive_json_from(timeout=3))["kind"] == "snapshot"
    assert _viewers(backend, running_job.id) == 1
    assert backend.wakeups.watched([str(running_job.id)]) == {str(running_job.id)}
    await socket.disconnect()
    assert _viewers(backend, running_job.id) == 0
    assert not redis_client.exists(backend.wakeups.watch_key(str(running_job.id)))
    assert backend.wakeups.watched([str(running_job.id)]) == set()


async def test_many_sockets_opening_and_closing_at_once_end_at_zero_viewers(
    backend, redis_client, running_job, workflow_id, staff_cookie
):
    """40 pages follow one workflow and one job at the same time, then go: half close
    normally, half are cut so abruptly that the server cancels their consumers (what Daphne
    does to a consumer that does not end in time), which runs no disconnect. Every one is
    counted in while open and out after."""
    sockets = [
        _socket(f"/ws/leasequeue/workflows/{workflow_id}/", cookie=staff_cookie) for _ in range(20)
    ] + [_socket(f"/ws/leasequeue/jobs/{running_job.id}/", cookie=staff_cookie) for _ in range(20)]
    connected = await asyncio.gather(*(socket.connect(timeout=30) for socket in sockets))
    assert all(ok for ok, _code in connected)
    assert (_viewers(backend, workflow_id), _viewers(backend, running_job.id)) == (20, 20)
    await asyncio.gather(
        *(socket.disconnect(timeout=3) for socket in sockets[::2]),
        *(socket.disconnect(timeout=0.001) for socket in sockets[1::2]),
        return_exceptions=True,
    )
    assert (_viewers(backend, workflow_id), _viewers(backend, running_job.id)) == (0, 0)

    # Cut before their handshake is even handled: nothing counted in, nothing left behind.
    cut = [
        _socket(f"/ws/leasequeue/jobs/{running_job.id}/", cookie=staff_cookie) for _ in range(20)
    ]
    for socket in cut:
        await socket.send_input({"type": "websocket.connect"})
    await asyncio.gather(*(s.disconnect(timeout=0.001) for s in cut), return_exceptions=True)
    assert _viewers(backend, running_job.id) == 0


async def test_one_token_holds_at_most_its_cap_of_websockets(backend, redis_client, running_job):
    """A client with one token opening a dozen sockets gets MAX_SOCKETS_PER_TOKEN (its page
    polls past them); a socket closed frees its place; staff are not capped."""
    token = job_token(running_job.id)
    sockets = [_socket(f"/ws/leasequeue/jobs/{running_job.id}/", token=token) for _ in range(12)]
    results = await asyncio.gather(*(socket.connect(timeout=30) for socket in sockets))
    accepted = [socket for socket, (ok, _code) in zip(sockets, results, strict=True) if ok]
    assert len(accepted) == MAX_SOCKETS_PER_TOKEN
    assert sorted(code for ok, code in results if not ok) == [CLOSE_TOO_MANY] * 7
    assert _viewers(backend, running_job.id) == MAX_SOCKETS_PER_TOKEN

    await accepted[0].disconnect()
    again = _socket(f"/ws/leasequeue/jobs/{running_job.id}/", token=token)
    assert (await again.connect())[0]
    cookie = await database_sync_to_async(lambda: session_cookie(staff_user(can_view=True)))()
    staff = [_socket(f"/ws/leasequeue/jobs/{running_job.id}/", cookie=cookie) for _ in range(8)]
    assert all(ok for ok, _ in await asyncio.gather(*(s.connect(timeout=30) for s in staff)))
    for socket in [*accepted[1:], again, *staff]:
        await socket.disconnect()
    assert _viewers(backend, running_job.id) == 0
    assert not redis_client.exists(backend.wakeups.token_key(token))


async def test_a_workflow_token_is_capped_too(backend, redis_client, workflow_id):
    token = workflow_token(workflow_id)
    path = f"/ws/leasequeue/workflows/{workflow_id}/"
    sockets = [_socket(path, token=token) for _ in range(MAX_SOCKETS_PER_TOKEN + 1)]
    results = [await socket.connect(timeout=10) for socket in sockets]
    assert results[-1] == (False, CLOSE_TOO_MANY)
    assert all(ok for ok, _code in results[:-1])
    for socket in sockets[:-1]:
        await socket.disconnect()
    assert _viewers(backend, workflow_id) == 0


def test_a_viewer_never_counted_out_stops_counting_after_its_ttl(
    backend, redis_client, monkeypatch
):
    """A web server that died leaves its viewers in Redis: they stop counting once their time
    is up, by Redis's clock, while a viewer that keeps saying it is there still counts; leaving
    twice, or without having joined, changes nothing."""
    # Three seconds, not one: a loaded machine (a CPU hog on every core) paused this test for
    # over a second between the two watches and the first count.
    ttl = 3
    monkeypatch.setattr(viewers, "VIEWER_TTL_SECONDS", ttl)
    object_id = str(uuid.uuid4())
    dead, live = Viewer(object_id, "dead-server", None), Viewer(object_id, "live-server", None)
    dead.watch()
    live.watch()
    assert _viewers(backend, object_id) == 2
    for _ in range(2 * ttl + 1):  # the dead one's time is up; the live one says it is there
        live.watch()
        time.sleep(0.5)
    live.watch()
    assert _viewers(backend, object_id) == 1  # the dead one was dropped
    live.leave()
    live.leave()
    Viewer(object_id, "never-joined", None).leave()
    assert _viewers(backend, object_id) == 0
    dead.watch()
    time.sleep(ttl + 1.1)
    assert backend.wakeups.watched([object_id]) == set()  # the key itself expired
    assert not redis_client.exists(backend.wakeups.watch_key(object_id))
