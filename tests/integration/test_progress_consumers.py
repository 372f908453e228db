"""The job progress websocket, over the real ASGI application and the channels-redis layer."""

import asyncio
import logging
import sys

import pytest
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from channels.testing import WebsocketCommunicator
from django.urls import path

from django_leasequeue import progress_events as events
from django_leasequeue.ids import uuid7
from django_leasequeue.progress.access import job_token
from django_leasequeue.progress.consumers import (
    CLOSE_FORBIDDEN,
    CLOSE_NOT_FOUND,
    CLOSE_TOKEN_EXPIRED,
    CLOSE_UNAVAILABLE,
    JobProgressConsumer,
)
from django_leasequeue.routing import websocket_urlpatterns
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.executor import execute
from django_leasequeue.sql.records import ClaimedJob
from tests.support.asgi import application
from tests.support.helpers import claim_one
from tests.support.servers import RedisServer
from tests.support.tasks.basic import quick_retry
from tests.support.viewers import aged_token, forged_token, session_cookie, staff_user

pytestmark = pytest.mark.django_db(transaction=True)


def _socket(job_id, *, token: str | None = None, cookie: bytes | None = None, app=application):
    query = f"?token={token}" if token else ""
    headers = [(b"cookie", cookie)] if cookie else []
    return WebsocketCommunicator(app, f"/ws/leasequeue/jobs/{job_id}/{query}", headers=headers)


async def _closed(communicator: WebsocketCommunicator) -> dict:
    message = await communicator.receive_output(timeout=3)
    assert message["type"] == "websocket.close"
    return message


async def _refused(communicator: WebsocketCommunicator) -> int:
    connected, code = await communicator.connect()
    assert connected is False
    return code


_execute = database_sync_to_async(execute)


@pytest.fixture
def running_job(backend):
    """A job a (simulated) worker has claimed: tests write its progress through the lease."""
    return claim_one(quick_retry.enqueue(1).id, "worker-a")


@pytest.fixture
def staff_cookie(db):
    return session_cookie(staff_user(can_view=True))


async def _report(job: ClaimedJob, current: float, total: float, message: str) -> None:
    """What the worker runtime does on ``context.progress``: fenced write, then publish."""
    written = await _execute(jobs_sql.progress(job.lease, current, total, message))
    assert written
    await events.apublish(
        job.id, {"kind": "progress", "current": current, "total": total, "message": message}
    )


async def test_staff_viewer_gets_snapshot_then_live_events_then_final_and_close(
    running_job, staff_cookie
):
    await _execute(jobs_sql.progress(running_job.lease, 2, 10, "warming"))
    socket = _socket(running_job.id, cookie=staff_cookie)
    assert await socket.connect() == (True, None)

    snapshot = await socket.receive_json_from(timeout=3)
    assert snapshot == {
        "kind": "snapshot",
        "job_id": str(running_job.id),
        "status": "running",
        "current": 2.0,
        "total": 10.0,
        "message": "warming",
        "percent": 20,
        "attempt": 1,
        "final": False,
    }

    await _report(running_job, 7, 10, "crunching")
    assert await socket.receive_json_from(timeout=3) == {
        "kind": "progress",
        "current": 7,
        "total": 10,
        "message": "crunching",
    }

    done = await _execute(jobs_sql.complete(running_job.lease, 42))
    assert done
    await events.apublish(running_job.id, {"kind": "status", "status": "succeeded"})
    assert await socket.receive_json_from(timeout=3) == {"kind": "status", "status": "succeeded"}
    final = await socket.receive_json_from(timeout=3)
    assert (final["kind"], final["status"], final["final"], final["percent"]) == (
        "final",
        "succeeded",
        True,
        100,
    )
    assert final["message"] == "crunching"
    await _closed(socket)


async def test_token_holder_without_login_is_served(running_job):
    socket = _socket(running_job.id, token=job_token(running_job.id))
    assert await socket.connect() == (True, None)
    snapshot = await socket.receive_json_from(timeout=3)
    assert (snapshot["kind"], snapshot["status"], snapshot["percent"]) == (
        "snapshot",
        "running",
        None,
    )
    await socket.disconnect()


async def test_anonymous_viewer_without_token_is_refused(running_job):
    assert await _refused(_socket(running_job.id)) == CLOSE_FORBIDDEN


async def test_staff_without_view_permission_is_refused(running_job):
    cookie = await database_sync_to_async(lambda: session_cookie(staff_user(can_view=False)))()
    assert await _refused(_socket(running_job.id, cookie=cookie)) == CLOSE_FORBIDDEN


async def test_forged_token_is_refused(running_job):
    assert await _refused(_socket(running_job.id, token=forged_token(running_job.id))) == (
        CLOSE_FORBIDDEN
    )


async def test_expired_token_is_refused(running_job):
    expired = aged_token(running_job.id, 2 * 24 * 3600)
    assert await _refused(_socket(running_job.id, token=expired)) == CLOSE_FORBIDDEN


async def test_a_token_is_checked_for_the_whole_life_of_the_connection(running_job, settings):
    """A token that expires while its page is open closes the socket: no event after expiry."""
    settings.LEASEQUEUE_PROGRESS_TOKEN_MAX_AGE = 60
    token = aged_token(running_job.id, 57)  # expires in about three seconds
    socket = _socket(running_job.id, token=token)
    assert await socket.connect() == (True, None)
    assert (await socket.receive_json_from(timeout=3))["kind"] == "snapshot"
    closed = await asyncio.wait_for(_next_close(socket), 10)
    assert closed["code"] == CLOSE_TOKEN_EXPIRED
    await events.apublish(running_job.id, {"kind": "progress", "current": 1, "total": 2})
    assert await socket.receive_nothing(timeout=0.5)


async def _next_close(socket: WebsocketCommunicator) -> dict:
    while True:
        message = await socket.receive_output(timeout=5)
        if message["type"] == "websocket.close":
            return message


async def test_staff_connections_do_not_expire_with_a_token(running_job):
    cookie = await database_sync_to_async(lambda: session_cookie(staff_user(can_view=True)))()
    socket = _socket(running_job.id, cookie=cookie, token=aged_token(running_job.id, 86399))
    assert await socket.connect() == (True, None)
    assert (await socket.receive_json_from(timeout=3))["kind"] == "snapshot"
    assert await socket.receive_nothing(timeout=1.5)
    await socket.disconnect()


async def test_a_message_from_the_client_is_ignored_without_an_error(running_job, caplog):
    socket = _socket(running_job.id, token=job_token(running_job.id))
    assert await socket.connect() == (True, None)
    await socket.receive_json_from(timeout=3)
    await socket.send_to(text_data="not json at all {")
    await socket.send_to(bytes_data=b"\x00\xff")
    await events.apublish(running_job.id, {"kind": "progress", "current": 1, "total": 4})
    assert (await socket.receive_json_from(timeout=3))["kind"] == "progress"
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
    await socket.disconnect()


async def test_a_signed_token_without_a_timestamp_is_refused(running_job):
    from django.core import signing

    from django_leasequeue.progress import access

    untimed = signing.Signer(salt=access._SALT).sign(str(running_job.id))
    assert await _refused(_socket(running_job.id, token=untimed)) == CLOSE_FORBIDDEN


async def test_a_page_on_another_origin_is_refused_even_with_a_staff_cookie(running_job, settings):
    """The documented ASGI setup wraps the routes in AllowedHostsOriginValidator: a page on
    another site cannot ride on a staff member's session cookie."""
    settings.ALLOWED_HOSTS = ["testserver"]
    app = AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
    cookie = await database_sync_to_async(lambda: session_cookie(staff_user(can_view=True)))()
    path = f"/ws/leasequeue/jobs/{running_job.id}/"
    own = WebsocketCommunicator(
        app, path, headers=[(b"cookie", cookie), (b"origin", b"http://testserver")]
    )
    assert (await own.connect())[0] is True
    await own.disconnect()
    foreign = WebsocketCommunicator(
        app, path, headers=[(b"cookie", cookie), (b"origin", b"https://evil.example")]
    )
    assert (await foreign.connect())[0] is False


async def test_token_for_another_job_is_refused(running_job):
    other = await database_sync_to_async(lambda: quick_retry.enqueue(2).id)()
    assert await _refused(_socket(running_job.id, token=job_token(other))) == CLOSE_FORBIDDEN


async def test_unknown_job_is_refused_even_with_its_token(db):
    missing = uuid7()
    assert await _refused(_socket(missing, token=job_token(missing))) == CLOSE_NOT_FOUND


async def test_late_viewer_of_a_finished_job_gets_its_final_state_and_close(running_job):
    await _execute(jobs_sql.progress(running_job.lease, 3, 4, "almost"))
    await _execute(jobs_sql.complete(running_job.lease, None))
    socket = _socket(running_job.id, token=job_token(running_job.id))
    assert (await socket.connect())[0]
    snapshot = await socket.receive_json_from(timeout=3)
    final = await socket.receive_json_from(timeout=3)
    assert (snapshot["kind"], snapshot["status"], snapshot["final"]) == (
        "snapshot",
        "succeeded",
        True,
    )
    assert (final["kind"], final["status"], final["message"]) == ("final", "succeeded", "almost")
    await _closed(socket)


async def test_a_job_that_ends_without_any_event_is_noticed_from_the_database(running_job):
    """A cancel or a recover sweep publishes nothing: the consumer's recheck still closes."""
    fast = URLRouter(
        [
            path(
                "ws/leasequeue/jobs/<uuid:job_id>/",
                JobProgressConsumer.as_asgi(recheck_seconds=0.2),
            )
        ]
    )
    socket = _socket(running_job.id, token=job_token(running_job.id), app=fast)
    assert (await socket.connect())[0]
    assert (await socket.receive_json_from(timeout=3))["kind"] == "snapshot"
    await _execute(jobs_sql.finish_cancelled(running_job.lease))
    final = await socket.receive_json_from(timeout=3)
    assert (final["kind"], final["status"], final["final"]) == ("final", "cancelled", True)
    await _closed(socket)


async def test_events_published_by_another_process_reach_the_websocket(running_job):
    socket = _socket(running_job.id, token=job_token(running_job.id))
    assert (await socket.connect())[0]
    await socket.receive_json_from(timeout=3)
    script = (
        "import django; django.setup(); from django_leasequeue import progress_events as events; "
        f"events.publish('{running_job.id}', "
        "{'kind': 'progress', 'current': 5, 'total': 8, 'message': 'from afar'})"
    )
    publisher = await asyncio.create_subprocess_exec(sys.executable, "-c", script)
    assert await publisher.wait() == 0
    assert await socket.receive_json_from(timeout=5) == {
        "kind": "progress",
        "current": 5,
        "total": 8,
        "message": "from afar",
    }
    await socket.disconnect()


async def test_only_one_final_state_is_sent_however_many_end_events_arrive(running_job):
    socket = _socket(running_job.id, token=job_token(running_job.id))
    assert (await socket.connect())[0]
    assert (await socket.receive_json_from(timeout=3))["kind"] == "snapshot"
    assert await _execute(jobs_sql.finish_cancelled(running_job.lease))
    await events.apublish(running_job.id, {"kind": "status", "status": "cancelled"})
    await events.apublish(running_job.id, {"kind": "status", "status": "cancelled"})
    assert (await socket.receive_json_from(timeout=3))["kind"] == "status"
    assert (await socket.receive_json_from(timeout=3))["kind"] == "final"
    await _closed(socket)
    assert await socket.receive_nothing(timeout=0.5)


async def test_a_channel_layer_that_is_down_ends_sockets_cleanly_and_is_logged_once(
    running_job, settings, caplog
):
    """The channel layer's own Redis stops: each socket (a page tries three before it polls) is
    refused with CLOSE_UNAVAILABLE, not an error; the outage is one log line, and its end one
    more; once Redis is back, sockets are served again."""
    layer = RedisServer().start()
    try:
        settings.CHANNEL_LAYERS = {
            "default": {
                "BACKEND": "channels_redis.core.RedisChannelLayer",
                "CONFIG": {"hosts": [layer.url], "prefix": "lqtest-down"},
            }
        }
        token = job_token(running_job.id)
        socket = _socket(running_job.id, token=token)
        assert await socket.connect() == (True, None)  # served: no outage going on
        assert (await socket.receive_json_from(timeout=3))["kind"] == "snapshot"
        await socket.disconnect()

        layer.stop()
        caplog.set_level(logging.INFO, "django_leasequeue.progress.consumers")
        for _ in range(3):
            assert await _refused(_socket(running_job.id, token=token)) == CLOSE_UNAVAILABLE
        [down] = [r for r in caplog.records if r.name == "django_leasequeue.progress.consumers"]
        assert down.levelname == "WARNING" and down.exc_info is None
        assert down.getMessage().startswith(
            f"The channel layer: live progress of {running_job.id} unavailable ("
        )
        assert "progress bars poll the JSON status view instead" in down.getMessage()
        assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]

        layer.start()
        for _attempt in range(3):  # as a page does: the layer may drop a dead connection first
            socket = _socket(running_job.id, token=token)
            connected, _code = await socket.connect()
            if connected:
                break
        assert connected
        assert (await socket.receive_json_from(timeout=3))["kind"] == "snapshot"
        await socket.disconnect()
        ours = [r.getMessage() for r in caplog.records if r.name == down.name]
        assert len(ours) == 2 and ours[1].startswith("The channel layer answers again, after ")
    finally:
        layer.stop()
