"""Workflows as operators count them: the Prometheus metrics read from the workflow table at
scrape time, and ``manage.py leasequeue status``."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

from django_leasequeue import Workflow
from django_leasequeue.management import status_report
from django_leasequeue.operations import cancel_workflow
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.executor import execute
from django_leasequeue.workflows.handle import WorkflowHandle
from tests.support.helpers import claim_one
from tests.support.tasks.workflows import noop

pytestmark = pytest.mark.django_db(transaction=True)


def _workflow(name: str) -> WorkflowHandle:
    """A one-step workflow, running."""
    wf = Workflow(name)
    wf.add(noop, name="only")
    return wf.enqueue()


def _end(handle, *, fail: bool = False) -> None:
    claimed = claim_one(handle.step_ids["only"], "w-metrics")
    if fail:
        assert execute(
            jobs_sql.fail(
                claimed.lease,
                exception_class_path="builtins.OSError",
                message="down",
                traceback="",
                retryable=False,
                backoff_cap_seconds=1,
            )
        )
    else:
        assert execute(jobs_sql.complete(claimed.lease, None))


@pytest.fixture
def workflows_in_every_state():
    """Two running, three succeeded, one failed, one cancelled."""
    _workflow("running-1")
    _workflow("running-2")
    for index in range(3):
        _end(_workflow(f"done-{index}"))
    _end(_workflow("broken"), fail=True)
    cancel_workflow(_workflow("stopped").id, "default")


def test_the_metrics_count_running_and_finished_workflows_at_scrape_time(
    admin_client, workflows_in_every_state
):
    body = admin_client.get(reverse("leasequeue:metrics")).content.decode()
    families = {family.name: family for family in text_string_to_metric_families(body)}
    assert families["leasequeue_workflows_finished"].type == "counter"
    finished = {
        sample.labels["status"]: sample.value
        for sample in families["leasequeue_workflows_finished"].samples
    }
    assert finished == {"succeeded": 3, "failed": 1, "cancelled": 1}
    assert 'leasequeue_workflows_finished_total{status="succeeded"} 3.0' in body
    assert families["leasequeue_workflows_running"].type == "gauge"
    assert families["leasequeue_workflows_running"].samples[0].value == 2


def test_without_workflows_every_status_reads_zero(admin_client):
    body = admin_client.get(reverse("leasequeue:metrics")).content.decode()
    assert "leasequeue_workflows_running 0.0" in body
    for status in ("succeeded", "failed", "cancelled"):
        assert f'leasequeue_workflows_finished_total{{status="{status}"}} 0.0' in body


def test_status_counts_running_workflows_in_text_and_json(backend, workflows_in_every_state):
    assert status_report.build(backend).totals.workflows_running == 2
    text = StringIO()
    with pytest.raises(CommandError):  # no worker is alive: unhealthy, but printed first
        call_command("leasequeue", "status", stdout=text)
    assert "Workflows running:  2" in text.getvalue()
    as_json = StringIO()
    with pytest.raises(CommandError):
        call_command("leasequeue", "status", "--json", stdout=as_json)
    assert json.loads(as_json.getvalue())["totals"]["workflows_running"] == 2
