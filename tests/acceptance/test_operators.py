"""What operators see of real ``runworkers`` processes: the worker registry, the status
command, and the Prometheus metrics scraped while the workers run jobs."""

import contextlib
import json
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from django_leasequeue.models import Job, Worker
from tests.acceptance import harness
from tests.acceptance.harness import ROOT, wait_until
from tests.support.helpers import validate_status_json
from tests.support.processes import popen_options
from tests.support.tasks.basic import add, async_sleep, flaky

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

ADD = "tests.support.tasks.basic.add"


def alive_rows() -> list[Worker]:
    now = timezone.now()
    return [w for w in Worker.objects.all() if w.state(now) == "alive"]


def all_done(ids) -> bool:
    return Job.objects.filter(pk__in=ids, status__in=["succeeded", "failed"]).count() == len(ids)


# The worker registry


def test_each_worker_process_keeps_its_row_fresh_and_ends_it(start_workers):
    workers = start_workers("--processes", "2", "--queues", "*", "--concurrency", "4")
    pids = workers.wait_for_children(2)
    wait_until(lambda: len(alive_rows()) == 2, 20, "two registered workers")
    rows = {w.pid: w for w in alive_rows()}
    assert set(rows) == set(pids)
    assert all(w.queues is None and w.concurrency == 4 for w in rows.values())
    assert all(w.id.startswith(f"{w.host}:") for w in rows.values())

    ids = [add.enqueue(i, 1).id for i in range(40)]
    wait_until(lambda: all_done(ids), 30, "40 jobs")
    # The heartbeat tick (0.3 s here) reports the jobs done; no write per job.
    wait_until(
        lambda: sum(Worker.objects.values_list("jobs_done", flat=True)) == 40, 10, "jobs_done"
    )
    beats = dict(Worker.objects.values_list("id", "heartbeat_at"))
    wait_until(
        lambda: all(w.heartbeat_at > beats[w.id] for w in Worker.objects.all()),
        10,
        "every row's heartbeat to move on",
    )

    # kill -9: its supervisor marks the row dead at once; the replacement registers.
    os.kill(pids[0], signal.SIGKILL)
    wait_until(
        lambda: Worker.objects.filter(pid=pids[0], exit="killed by SIGKILL").exists(),
        10,
        "the killed worker's row marked dead",
    )
    assert Worker.objects.get(pid=pids[0]).state(timezone.now()) == "dead"
    wait_until(lambda: len(alive_rows()) == 2, 20, "a replacement worker registered")

    assert workers.stop() == 0
    states = {w.pid: (w.state(timezone.now()), w.exit) for w in Worker.objects.all()}
    assert states[pids[0]] == ("dead", "killed by SIGKILL")
    assert sorted(states.values()).count(("stopped", "stopped")) == 2
    assert all(w.jobs_running == 0 for w in Worker.objects.all())


def test_rows_of_workers_gone_past_the_retention_are_deleted(start_workers):
    now = timezone.now()
    for worker_id, gone_for in [("old", timedelta(hours=2)), ("recent", timedelta(minutes=1))]:
        Worker.objects.create(
            id=worker_id,
            host="h",
            pid=1,
            concurrency=1,
            lease_seconds=30,
            started_at=now - gone_for,
            heartbeat_at=now - gone_for,
        )
    start_workers(options={"worker_retention_seconds": 3600})
    wait_until(lambda: not Worker.objects.filter(pk="old").exists(), 20, "the old row pruned")
    assert Worker.objects.filter(pk="recent").exists()


# manage.py leasequeue status


def status(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "django", "leasequeue", "status", *args],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
        **kwargs,
    )


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.support.settings",
        "DATABASE_URL": harness.test_database_url(),
        "PYTHONPATH": str(ROOT),
    }


def test_status_is_healthy_with_live_workers_and_exits_1_without(start_workers):
    done = status()
    assert done.returncode == 1 and "no worker is alive" in done.stderr
    assert "Workers alive:      0" in done.stdout

    workers = start_workers("--processes", "2")
    wait_until(lambda: len(alive_rows()) == 2, 20, "two registered workers")
    ids = [add.enqueue(i, 1).id for i in range(10)]
    wait_until(lambda: all_done(ids), 30, "10 jobs")
    wait_until(lambda: "Workers alive:      2" in status().stdout, 10, "status sees both workers")
    done = status("--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    validate_status_json(report)
    assert report["healthy"] is True and report["problems"] == []
    assert len(report["workers"]) == 2
    assert {w["pid"] for w in report["workers"]} == set(workers.children())
    queues = {q["name"]: q for q in report["queues"]}
    assert set(queues) == {"default", "high", "low", "other", "llm"}  # the declared queues
    assert queues["default"]["finished_last_minute"] == 10
    # The llm queue's limits (tests/support/settings/__init__.py), unused; no limited task has jobs.
    assert queues["llm"]["limits"] == {
        "concurrency": {"cap": 2, "used": 0},
        "rate_limit": None,
        "max_pending": {"cap": 1000, "used": 0},
    }
    assert report["limited_tasks"] == [] and report["totals"] == {
        "workers_alive": 2,
        "workflows_running": 0,
    }
    assert all(worker["queues"] == ["default"] for worker in report["workers"])

    workers.stop()
    done = status("--json")
    assert done.returncode == 1 and json.loads(done.stdout)["problems"] == ["no worker is alive"]


def test_status_exits_1_when_a_queue_waits_longer_than_max_age(start_workers):
    start_workers("--queues", "default")
    wait_until(lambda: len(alive_rows()) == 1, 20, "a registered worker")
    stuck = add.using(queue_name="other").enqueue(1, 1)  # nobody serves "other"
    Job.objects.filter(pk=stuck.id).update(run_after=timezone.now() - timedelta(minutes=10))
    assert status("--max-age", "900").returncode == 0
    done = status("--max-age", "60")
    assert done.returncode == 1
    assert "queue 'other': the oldest due job has waited" in done.stderr
    assert "other" in done.stdout and "10 min" in done.stdout
    assert status("--max-age", "soon").returncode == 2  # argparse: a clear usage error


def test_status_watch_refreshes_in_place_in_a_terminal(start_workers):
    start_workers()
    wait_until(lambda: len(alive_rows()) == 1, 20, "a registered worker")
    leader, follower = pty.openpty()
    # SIGABRT makes it print every thread's stack (below, when it does not stop).
    options = popen_options({**_env(), "PYTHONFAULTHANDLER": "1"})
    die_with_test = options["preexec_fn"]

    def as_in_a_terminal() -> None:
        # A test run started in the background (`pytest &`, nohup) ignores SIGINT, and so
        # would the command (Python leaves an ignored SIGINT ignored); Ctrl-C reaches it here.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        die_with_test()

    process = subprocess.Popen(
        [sys.executable, "-m", "django", "leasequeue", "status", "--watch", "--interval", "0.5"],
        cwd=ROOT,
        stdout=follower,
        stderr=follower,
        **{**options, "preexec_fn": as_in_a_terminal},
    )
    os.close(follower)
    screen = b""
    deadline = time.monotonic() + 30
    while screen.count(b"\x1b[H\x1b[2J") < 3 and time.monotonic() < deadline:
        if select.select([leader], [], [], 0.5)[0]:
            screen += os.read(leader, 65536)
    process.send_signal(signal.SIGINT)
    # Read on while it exits: a terminal nobody reads fills up, and its last write would block.
    deadline = time.monotonic() + 10
    while process.poll() is None and time.monotonic() < deadline:
        if select.select([leader], [], [], 0.1)[0]:
            with contextlib.suppress(OSError):  # EIO once the process closed its side
                screen += os.read(leader, 65536)
    if process.poll() is None:  # say where it is stuck
        with open(f"/proc/{process.pid}/status") as status:  # which signals it ignores
            screen += "".join(line for line in status if line.startswith("Sig")).encode()
        process.send_signal(signal.SIGABRT)
        with contextlib.suppress(OSError):
            while select.select([leader], [], [], 2)[0]:
                screen += os.read(leader, 65536)
        process.kill()
        pytest.fail(f"still running 10 s after SIGINT:\n{screen[-6000:].decode(errors='replace')}")
    assert process.wait(1) == 0, screen[-2000:]  # healthy when interrupted
    os.close(leader)
    frames = [frame for frame in screen.split(b"\x1b[H\x1b[2J") if frame.strip()]
    assert len(frames) >= 2
    assert all(b"Workers alive:      1" in frame and b"OK" in frame for frame in frames[:2])


# Prometheus metrics


def scrape(body: str) -> dict[tuple[str, tuple], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(body)
        for sample in family.samples
    }


def labels(task: str, queue: str = "default") -> tuple:
    return (("queue", queue), ("task", task))


def test_metrics_endpoint_adds_up_every_worker_process(
    start_workers, admin_client, tmp_path, monkeypatch
):
    """Multiprocess mode: each worker writes its values under PROMETHEUS_MULTIPROC_DIR and the
    view (here the test process, as a web process would) sums them."""
    directory = tmp_path / "prometheus"
    directory.mkdir()
    workers = start_workers(
        "--processes", "2", "--queues", "*", env={"PROMETHEUS_MULTIPROC_DIR": str(directory)}
    )
    wait_until(lambda: len(alive_rows()) == 2, 20, "two registered workers")
    ids = [add.enqueue(i, 1).id for i in range(25)] + [flaky.enqueue(1).id]
    for _ in range(2):  # not due for an hour: they stay queued
        add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(0, 0)
    wait_until(lambda: all_done(ids), 30, "the jobs")
    slow = async_sleep.enqueue(5).id
    wait_until(lambda: Job.objects.get(pk=slow).status == "running", 20, "a running job")

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(directory))
    response = admin_client.get(reverse("leasequeue:metrics"))
    assert response.status_code == 200
    scraped = scrape(response.content.decode())
    assert scraped[("leasequeue_jobs_started_total", labels(ADD))] == 25
    assert scraped[("leasequeue_jobs_succeeded_total", labels(ADD))] == 25
    assert scraped[("leasequeue_job_run_seconds_count", labels(ADD))] == 25
    assert scraped[("leasequeue_job_queue_latency_seconds_count", labels(ADD))] == 25
    # Claimed within seconds of being due, on an idle machine or a loaded one.
    assert (
        scraped[
            (
                "leasequeue_job_queue_latency_seconds_bucket",
                tuple(sorted((*labels(ADD), ("le", "10.0")))),
            )
        ]
        == 25
    )
    assert (
        scraped[("leasequeue_jobs_started_total", labels("tests.support.tasks.basic.flaky"))] == 2
    )
    assert (
        scraped[("leasequeue_jobs_retried_total", labels("tests.support.tasks.basic.flaky"))] == 1
    )
    assert scraped[("leasequeue_jobs_failed_total", labels("tests.support.tasks.basic.flaky"))] == 1
    assert (
        "leasequeue_jobs_succeeded_total",
        labels("tests.support.tasks.basic.flaky"),
    ) not in scraped
    # Gauges, from PostgreSQL at scrape time.
    assert scraped[("leasequeue_workers_alive", ())] == 2
    assert scraped[("leasequeue_jobs_queued", (("queue", "default"),))] == 2
    assert scraped[("leasequeue_jobs_running", (("queue", "default"),))] == 1
    assert not any("job_id" in dict(key[1]) for key in scraped)

    # kill -9 the worker holding the slow job: its lease is recovered, and counted.
    holder = Job.objects.get(pk=slow).worker_id
    pid = Worker.objects.get(pk=holder).pid
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: Job.objects.get(pk=slow).attempt == 2, 20, "the slow job taken over")
    scraped = scrape(admin_client.get(reverse("leasequeue:metrics")).content.decode())
    key = ("leasequeue_leases_recovered_total", labels("tests.support.tasks.basic.async_sleep"))
    assert scraped[key] == 1
    # Taken back for another attempt: that counts as a retry.
    assert (
        scraped[("leasequeue_jobs_retried_total", labels("tests.support.tasks.basic.async_sleep"))]
        == 1
    )
    # The dead process's counts stay in the sums: totals never go backwards.
    assert scraped[("leasequeue_jobs_started_total", labels(ADD))] == 25
    workers.stop()


def free_port_pair() -> int:
    for _ in range(50):
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            with socket.socket() as second:
                try:
                    second.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
            return port
    raise AssertionError("no two free ports in a row")


def test_each_worker_process_serves_its_own_port(start_workers):
    port = free_port_pair()
    # A long lease: on a loaded machine a short one expires and a job starts twice.
    start_workers("--processes", "2", options={"metrics_port": port, "lease_seconds": 10.0})
    wait_until(lambda: len(alive_rows()) == 2, 20, "two registered workers")
    ids = [add.enqueue(i, 1).id for i in range(12)]
    wait_until(lambda: all_done(ids), 30, "the jobs")
    started = 0.0
    for each in (port, port + 1):
        with urllib.request.urlopen(f"http://127.0.0.1:{each}/metrics", timeout=5) as response:
            started += scrape(response.read().decode()).get(
                ("leasequeue_jobs_started_total", labels(ADD)), 0.0
            )
    assert started == 12
