"""``manage.py leasequeue status``: the limits in use, each once, and the text and JSON shapes."""

import json
import re
from datetime import timedelta
from io import StringIO
from pathlib import Path

import jsonschema
import pytest
from django.core.management import call_command
from django.utils import timezone

from django_leasequeue.management import status_output, status_report
from django_leasequeue.management.status_report import Cap, LimitedTask, QueueLimits
from django_leasequeue.models import Worker
from tests.support.helpers import claim_limited, validate_status_json
from tests.support.tasks import flow as flow_tasks

pytestmark = pytest.mark.django_db(transaction=True)

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "status.schema.json").read_text())


def _live_worker(worker_id: str, queues: list[str] | None) -> None:
    now = timezone.now()
    Worker.objects.create(
        id=worker_id, host="vm", pid=4242, queues=queues, concurrency=8, lease_seconds=30,
        started_at=now - timedelta(minutes=5), heartbeat_at=now,
    )  # fmt: skip


def _busy_flow(backend) -> None:
    """Task limits (a task's cap, a cap per key, a rate) and the llm queue's limits in use."""
    [flow_tasks.single_slot.enqueue(n, 0) for n in range(3)]
    [flow_tasks.llm_call.enqueue(user_id, 0, 0) for user_id in range(3)]
    flow_tasks.unlimited.using(queue_name="llm").enqueue(1)  # held by the queue's cap alone
    flow_tasks.rated.enqueue(1)
    assert len(claim_limited(free=10)) == 1 + 2 + 1


def test_each_limit_is_reported_once_with_numbers_as_numbers(backend):
    _busy_flow(backend)
    report = status_report.build(backend)

    queues = {queue.name: queue for queue in report.queues}
    assert queues["llm"].limits == QueueLimits(
        concurrency=Cap(cap=2, used=2), rate_limit=None, max_pending=Cap(cap=1000, used=4)
    )
    assert queues["default"].limits is None
    tasks = {(task.task, task.key): task for task in report.limited_tasks}
    # The queue's own partition (jobs held by its limits alone) is the queue's line, not a task.
    assert all(task.startswith("tests.support.tasks.flow.") for task, _ in tasks)
    assert tasks[("tests.support.tasks.flow.single_slot", None)] == LimitedTask(
        task="tests.support.tasks.flow.single_slot", key=None, concurrency=1, rate_limit=None,
        running=1, waiting=2, held="waiting for a concurrency slot (1/1 running)",
    )  # fmt: skip
    llm_calls = [task for (path, _), task in tasks.items() if path.endswith(".llm_call")]
    assert sorted((task.running, task.waiting) for task in llm_calls) == [(0, 1), (0, 1), (1, 0)]
    for waiting in (task for task in llm_calls if task.waiting):
        assert waiting.concurrency == 1 and waiting.rate_limit is None
        assert waiting.held == "waiting for a slot of queue llm (2/2 running)"
    rated = tasks[("tests.support.tasks.flow.rated", None)]
    assert (rated.concurrency, rated.rate_limit, rated.running) == (None, "10/s", 1)

    text = status_output.render_text(report)
    # The llm queue's limits: one line of their own, not repeated in its tasks' lines.
    assert "\nLIMITED QUEUE  RUNNING  RATE LIMIT  UNFINISHED\nllm                2/2  —" in text
    assert [line.split()[0] for line in text.splitlines() if "llm" in line.split()[:1]] == [
        "llm",
        "llm",
    ]  # its queue line and its limits line
    assert "(llm)" not in text and "=" not in text  # no queue limit in a task's, no key=value
    assert "\ntests.support.tasks.flow.rated        —             1  10/s              0\n" in text
    assert (
        "\ntests.support.tasks.flow.single_slot  —           1/1  —                 2  waiting"
        in text
    )


def test_status_json_follows_the_documented_schema(backend):
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    _busy_flow(backend)
    _live_worker("vm:1:w0:every", None)
    _live_worker("vm:1:w1:named", ["default", "llm"])
    out = StringIO()
    call_command("leasequeue", "status", "--json", "--max-age", "3600", stdout=out)
    data = json.loads(out.getvalue())
    validate_status_json(data)
    assert (data["schema_version"], data["healthy"], data["problems"]) == (1, True, [])
    assert data["totals"] == {"workers_alive": 2, "workflows_running": 0}
    workers = {worker["id"]: worker for worker in data["workers"]}
    # The text's "*" and the JSON agree: a worker of every queue lists ["*"], never null.
    assert workers["vm:1:w0:every"]["queues"] == ["*"]
    assert workers["vm:1:w1:named"]["queues"] == ["default", "llm"]
    assert (workers["vm:1:w1:named"]["jobs_running"], workers["vm:1:w1:named"]["concurrency"]) == (
        0,
        8,
    )
    llm = next(queue for queue in data["queues"] if queue["name"] == "llm")
    assert llm["limits"] == {
        "concurrency": {"cap": 2, "used": 2},
        "rate_limit": None,
        "max_pending": {"cap": 1000, "used": 4},
    }
    assert {queue["name"] for queue in data["queues"]} == {"default", "high", "low", "other", "llm"}

    text = StringIO()
    call_command("leasequeue", "status", stdout=text)
    assert "\nvm:1:w0:every  vm    4242  *                0/8     0  " in text.getvalue()


def test_the_schema_refuses_what_the_old_output_had(backend):
    """The checks that make the schema worth having: strings for numbers, null for '*'."""
    data = status_output.as_json(status_report.build(backend))
    validate_status_json(data)
    for broken in (
        {"queues": [{**data["queues"][0], "running": "2/2"}]},
        {"workers": [{"id": "w", "host": "h", "pid": 1, "queues": None, "concurrency": 1,
                      "jobs_running": 0, "jobs_done": 0, "heartbeat_age_seconds": 0.5}]},
        {"totals": {"workers_alive": 0, "workflows_running": 0, "unknown_count": 1}},
    ):  # fmt: skip
        with pytest.raises(jsonschema.ValidationError):
            validate_status_json({**data, **broken})


def test_the_text_is_aligned_columns_under_a_title_block(backend):
    _live_worker("vm:1:w0:abc", ["default"])
    text = status_output.render_text(status_report.build(backend, max_age_seconds=60))
    lines = [re.sub(r"\b\d s ago$", "N s ago", line) for line in text.splitlines()]
    assert lines[0] == "Backend:            default"
    assert lines[1].startswith("Taken at:           ")
    assert lines[2] == "Workers alive:      1"
    assert lines[3] == "Workflows running:  0"
    assert lines[4:] == [
        "",
        "QUEUE    QUEUED  RUNNING  RETRYING  FAILED  OLDEST DUE  FINISHED/MIN",
        "default       0        0         0       0  —                      0",
        "high          0        0         0       0  —                      0",
        "llm           0        0         0       0  —                      0",
        "low           0        0         0       0  —                      0",
        "other         0        0         0       0  —                      0",
        "",
        "LIMITED QUEUE  RUNNING  RATE LIMIT  UNFINISHED",
        "llm                0/2  —               0/1000",
        "",  # no task limit in use: no empty table of them
        "WORKER       HOST   PID  QUEUES   RUNNING  DONE  HEARTBEAT",
        "vm:1:w0:abc  vm    4242  default      0/8     0  N s ago",
        "",
        "OK",
    ]
