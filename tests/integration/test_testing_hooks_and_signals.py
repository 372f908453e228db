"""A drain runs the backend's hooks (``wrap_run``, ``after_finish``) and sends Django's task
signals as a worker does."""

import pytest

from django_leasequeue.tasks_framework import TaskResultStatus, task_finished, task_started
from django_leasequeue.testing import drain, run_job
from tests.support.hook_examples import current_tenant, read_log
from tests.support.tasks import testing as tasks
from tests.support.tasks.hooks import async_tenant_and_meta, tenant_and_meta

pytestmark = pytest.mark.django_db

TENANT = "tests.support.hook_examples.TenantHook"
RECORDING = [
    "tests.support.hook_examples.RecordingHook",
    "tests.support.hook_examples.AsyncRecordingHook",
]


@pytest.fixture
def hooks(settings):
    def use(paths: list[str]) -> None:
        default = settings.TASKS["default"]
        settings.TASKS = {"default": {**default, "OPTIONS": {**default["OPTIONS"], "hooks": paths}}}

    return use


def test_the_tenant_captured_at_enqueue_is_current_while_the_job_runs(hooks, backend):
    """Converted from tests/acceptance/test_hooks.py, which started a worker to see it."""
    hooks([TENANT])
    token = current_tenant.set("acme")
    try:
        sync_job = tenant_and_meta.using(meta={"request_id": "r-9"}).enqueue()
        async_job = async_tenant_and_meta.enqueue()
    finally:
        current_tenant.reset(token)
    untenanted = tenant_and_meta.enqueue()
    assert drain().succeeded == 3
    backend = tenant_and_meta.get_backend()
    assert backend.get_result(sync_job.id).return_value == {
        "tenant": "acme",
        "meta": {"request_id": "r-9", "tenant": "acme"},
    }
    assert backend.get_result(async_job.id).return_value == {
        "tenant": "acme",
        "meta": {"tenant": "acme"},
    }
    assert backend.get_result(untenanted.id).return_value == {"tenant": None, "meta": {}}


def test_wrap_run_and_after_finish_see_every_attempt_sync_and_async(hooks, monkeypatch, tmp_path):
    log = tmp_path / "hooks.jsonl"
    monkeypatch.setenv("LEASEQUEUE_TEST_HOOK_LOG", str(log))
    hooks(RECORDING)
    ok = tasks.send_welcome.enqueue(1)
    failing = tasks.fails.enqueue("hooked")
    drain()
    seen = {
        (line["hook"], line["job_id"], line.get("outcome"), line.get("raised"))
        for line in read_log(log)
    }
    assert seen == {
        ("wrap", ok.id, None, None),
        ("after_finish", ok.id, "succeeded", None),
        ("aafter_finish", ok.id, "succeeded", None),
        ("wrap", failing.id, None, "ValueError"),
        ("after_finish", failing.id, "retrying", None),
        ("aafter_finish", failing.id, "retrying", None),
    }


def test_run_job_runs_the_hooks_too(hooks):
    hooks([TENANT])
    token = current_tenant.set("initech")
    try:
        assert run_job(tenant_and_meta) == {"tenant": "initech", "meta": {"tenant": "initech"}}
    finally:
        current_tenant.reset(token)


def test_task_started_and_task_finished_are_sent_with_each_attempts_result():
    received = []

    def started(sender, task_result, **kwargs):
        received.append(("started", task_result.id, task_result.status, task_result.attempts))

    def finished(sender, task_result, **kwargs):
        received.append(("finished", task_result.id, task_result.status, task_result.attempts))

    task_started.connect(started)
    task_finished.connect(finished)
    try:
        ok = tasks.send_welcome.enqueue(1)
        retried = tasks.fails.enqueue("signalled")
        drain()
    finally:
        task_started.disconnect(started)
        task_finished.disconnect(finished)
    assert [item for item in received if item[1] == ok.id] == [
        ("started", ok.id, TaskResultStatus.RUNNING, 1),
        ("finished", ok.id, TaskResultStatus.SUCCESSFUL, 1),
    ]
    assert [item for item in received if item[1] == retried.id] == [
        ("started", retried.id, TaskResultStatus.RUNNING, 1),  # a retry is not finished
    ]
