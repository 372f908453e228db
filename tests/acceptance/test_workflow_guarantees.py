"""The workflow guarantees of issue #22 against real runworkers processes: a step with many
parents becomes due exactly once, never before every parent has finished, and no step waits
forever, even while worker processes are SIGKILLed.

The steps write their run in the fenced transaction that completes them (``StepRun``): one row
per committed run, with the times the tasks themselves saw."""

import os
import random
import signal
import time
from collections import Counter

import pytest

from django_leasequeue import WorkflowStatus, chord, group, step
from django_leasequeue.models import Job, StepDependency, Worker, WorkflowRun
from tests.acceptance.harness import wait_until
from tests.support.models import Execution, StepRun
from tests.support.tasks.workflows import finale, gathered, timed

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.crash,
    # What they prove is the trigger's and the workers', not Django's: one series is enough.
    pytest.mark.django_independent,
]


def _fan_in(members: int, low_ms: int, high_ms: int, *, with_finale: bool = False):
    workflow = chord(
        group(*(step(timed, random.randint(low_ms, high_ms)) for _ in range(members))),
        step(gathered),
    )
    if with_finale:
        workflow.on_complete(finale)
    return workflow.enqueue()


def _running_workflows() -> int:
    return WorkflowRun.objects.filter(status=WorkflowStatus.RUNNING).count()


def _pids_running_steps() -> set[int]:
    holders = Job.objects.filter(status="running").values("worker_id")
    return set(Worker.objects.filter(id__in=holders).values_list("pid", flat=True))


def _assert_each_step_committed_once_and_never_early() -> int:
    """Every step's job succeeded with exactly one committed run, and each step started after
    every one of its parents had finished. Returns how many steps had parents."""
    assert Counter(Job.objects.values_list("status", flat=True)) == {
        "succeeded": Job.objects.count()
    }
    runs = Counter(StepRun.objects.values_list("job_id", flat=True))
    assert set(runs.values()) == {1}, "a step committed twice"
    assert set(runs) == set(Job.objects.values_list("id", flat=True))
    started = dict(StepRun.objects.values_list("job_id", "started_at"))
    finished = dict(StepRun.objects.values_list("job_id", "finished_at"))
    last_parent_finished: dict = {}
    for parent, child in StepDependency.objects.values_list("parent_id", "child_id"):
        last_parent_finished[child] = max(
            last_parent_finished.get(child, finished[parent]), finished[parent]
        )
    early = [child for child, at in last_parent_finished.items() if started[child] < at]
    assert not early, f"{len(early)} step(s) started before a parent had finished"
    return len(last_parent_finished)


def test_parents_finishing_together_on_two_workers_release_their_child_exactly_once(
    start_workers,
):
    handles = [_fan_in(10, 5, 20) for _ in range(30)]
    start_workers("--processes", "2", "--concurrency", "10")
    wait_until(lambda: _running_workflows() == 0, 60, "every workflow to end")
    assert _assert_each_step_committed_once_and_never_early() == len(handles)
    for handle in handles:
        callback = Job.objects.get(workflow_id=handle.id, step_name="gathered")
        assert (callback.attempt, len(callback.worker_ids)) == (1, 1)  # due once, run once
    assert set(WorkflowRun.objects.values_list("status", flat=True)) == {"succeeded"}


def test_200_workflows_under_a_kill_9_storm_all_end_and_each_callback_commits_once(
    start_workers,
):
    handles = [_fan_in(3, 50, 400, with_finale=True) for _ in range(200)]
    workers = start_workers("--processes", "3", "--concurrency", "10")
    workers.wait_for_children(3)
    kills = 0
    deadline = time.monotonic() + 40
    while _running_workflows() and time.monotonic() < deadline:
        time.sleep(0.6)
        # A child that runs steps now: a kill of one still starting would test nothing.
        busy = _pids_running_steps() & set(workers.children())
        if busy and kills < 12:
            try:
                os.kill(random.choice(sorted(busy)), signal.SIGKILL)
                kills += 1
            except ProcessLookupError:
                pass
    wait_until(lambda: _running_workflows() == 0, 90, "every workflow to end")
    assert set(WorkflowRun.objects.values_list("status", flat=True)) == {"succeeded"}
    assert _assert_each_step_committed_once_and_never_early() == 2 * len(handles)
    for handle in handles:
        finale_job = Job.objects.get(workflow_id=handle.id, step_name="on_complete")
        assert finale_job.result == ["gathered", "timed", "timed_2", "timed_3"]
    assert kills >= 5
    assert "killed by SIGKILL" in workers.log()
    # The storm hit running steps: they ran again (each run of a group step is recorded).
    reruns = Execution.objects.count() - 3 * len(handles)
    assert reruns > 0
    print(f"kill -9 x{kills}: {Job.objects.count()} steps, {reruns} group step runs again")
