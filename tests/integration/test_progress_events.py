"""Publishing job events to the channel layer: reaches subscribers, never fails the caller."""

import asyncio
import logging
import subprocess
import sys
import textwrap
import time

import pytest
from channels.layers import get_channel_layer
from django.test import override_settings

from devtools.services import free_port
from django_leasequeue import progress_events as events
from django_leasequeue.ids import uuid7

EVENT = {"kind": "progress", "current": 1.0, "total": 4.0, "message": "a quarter"}


async def test_apublish_reaches_a_member_of_the_job_group_through_channels_redis():
    layer = get_channel_layer()
    job_id, other_job_id = uuid7(), uuid7()
    watcher, bystander = await layer.new_channel(), await layer.new_channel()
    await layer.group_add(events.group_name(job_id), watcher)
    await layer.group_add(events.group_name(other_job_id), bystander)

    await events.apublish(job_id, EVENT)

    message = await asyncio.wait_for(layer.receive(watcher), 3)
    assert message == {"type": events.EVENT_TYPE, "event": EVENT}
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(layer.receive(bystander), 0.3)


def test_sync_publish_reaches_the_group_too():
    layer = get_channel_layer()
    job_id = uuid7()

    async def subscribe() -> str:
        channel = await layer.new_channel()
        await layer.group_add(events.group_name(job_id), channel)
        return channel

    async def receive(channel: str) -> dict:
        return await asyncio.wait_for(layer.receive(channel), 3)

    channel = asyncio.run(subscribe())
    events.publish(str(job_id), {"kind": "status", "status": "succeeded"})
    assert asyncio.run(receive(channel))["event"] == {"kind": "status", "status": "succeeded"}


async def test_an_event_that_fails_alone_does_not_pause_publishing_for_other_jobs(caplog):
    layer = get_channel_layer()
    broken_job, other_job = uuid7(), uuid7()
    watcher, broken_watcher = await layer.new_channel(), await layer.new_channel()
    await layer.group_add(events.group_name(other_job), watcher)
    await layer.group_add(events.group_name(broken_job), broken_watcher)
    with caplog.at_level(logging.WARNING):
        # msgpack cannot encode an object: this one event fails, the layer is fine.
        await events.apublish(broken_job, {"kind": "progress", "current": object()})
        await events.apublish(other_job, EVENT)
    assert "Could not publish progress event" in caplog.text
    message = await asyncio.wait_for(layer.receive(watcher), 3)
    assert message["event"] == EVENT


def test_group_names_are_valid_channels_names_one_per_job():
    layer = get_channel_layer()
    job_id = uuid7()
    name = events.group_name(job_id)
    assert layer.require_valid_group_name(name)
    assert events.group_name(str(job_id)) == name != events.group_name(uuid7())
    with pytest.raises(ValueError):
        events.group_name("../../etc")


@override_settings(CHANNEL_LAYERS={})
async def test_without_channel_layers_publishing_is_a_quiet_no_op(caplog):
    assert events.websockets_enabled() is False
    await events.apublish(uuid7(), EVENT)
    assert caplog.records == []


async def test_unreachable_channel_layer_is_logged_and_then_skipped_for_a_while(caplog):
    dead_redis = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [f"redis://127.0.0.1:{free_port()}/0"]},
        }
    }
    with override_settings(CHANNEL_LAYERS=dead_redis), caplog.at_level(logging.WARNING):
        started = time.monotonic()
        await events.apublish(uuid7(), EVENT)
        await events.apublish(uuid7(), EVENT)
        elapsed = time.monotonic() - started
    warnings = [r for r in caplog.records if r.name == "django_leasequeue.progress_events"]
    assert len(warnings) == 1, "the second publish should skip the layer that just failed"
    assert "Could not publish progress event" in warnings[0].getMessage()
    assert elapsed < 3


def test_the_app_imports_and_renders_without_channels_installed():
    script = textwrap.dedent(
        """
        import sys
        sys.modules["channels"] = None  # what an environment without the extra looks like
        import django
        django.setup()
        from django.template import Context, Template
        from django_leasequeue import progress, urls
        from django_leasequeue import progress_events as events
        from django_leasequeue.progress import views, widget
        from django_leasequeue.ids import uuid7
        from django_leasequeue.models import Job

        events.publish(uuid7(), {"kind": "status", "status": "running"})
        assert events.websockets_enabled() is False
        html = Template("{% load leasequeue %}{% leasequeue_progress job %}").render(
            Context({"job": Job(id=uuid7(), status="running")})
        )
        assert 'data-websocket-path=""' in html, html
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr


@pytest.mark.django_db(transaction=True)
def test_a_cancel_tells_open_pages_once_it_commits_and_not_if_rolled_back(backend):
    from django.db import transaction

    from tests.support.tasks.basic import add

    layer = get_channel_layer()
    kept, rolled_back = add.enqueue(1, 2).id, add.enqueue(3, 4).id

    async def subscribe(job_id) -> str:
        channel = await layer.new_channel()
        await layer.group_add(events.group_name(job_id), channel)
        return channel

    async def receive(channel: str, timeout: float) -> dict:
        return await asyncio.wait_for(layer.receive(channel), timeout)

    kept_channel = asyncio.run(subscribe(kept))
    rolled_back_channel = asyncio.run(subscribe(rolled_back))
    with pytest.raises(RuntimeError), transaction.atomic():
        backend.cancel([rolled_back])
        raise RuntimeError("the view failed")
    backend.cancel([kept])
    assert asyncio.run(receive(kept_channel, 3))["event"] == {
        "kind": "status",
        "status": "cancelled",
    }
    with pytest.raises(TimeoutError):
        asyncio.run(receive(rolled_back_channel, 0.3))
