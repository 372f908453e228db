"""Hooks in real workers: ``after_finish`` once per attempt with its outcome, broken hooks that
lose nothing and kill no worker, and JSON logs whose records about a job carry its id, task,
queue and attempt. The tenant carried from the enqueue into the task is shown in the test's own
process, by the testing drain (tests/integration/test_testing_hooks_and_signals.py)."""

import json
import logging

import pytest

from django_leasequeue.models import Job
from tests.acceptance.harness import LONG_LEASE, wait_until
from tests.support.hook_examples import read_log
from tests.support.tasks.hooks import (
    always_fails,
    fails_once,
    plain,
    snoozes_once,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

RECORDING = [
    "tests.support.hook_examples.RecordingHook",
    "tests.support.hook_examples.AsyncRecordingHook",
]
BROKEN = ["tests.support.hook_examples.BrokenHook", "tests.support.hook_examples.BrokenExitHook"]


def _done(*ids):
    return lambda: (
        Job.objects.filter(pk__in=ids, status__in=["succeeded", "failed"]).count() == len(ids)
    )


def test_after_finish_is_told_each_attempts_outcome_once(start_workers, tmp_path):
    hook_log = tmp_path / "hooks.jsonl"
    jobs = {
        "plain": plain.enqueue(1).id,
        "fails_once": fails_once.enqueue().id,
        "always_fails": always_fails.enqueue().id,
        "snoozes_once": snoozes_once.enqueue().id,
    }
    workers = start_workers(
        options={**LONG_LEASE, "hooks": RECORDING}, env={"LEASEQUEUE_TEST_HOOK_LOG": str(hook_log)}
    )
    wait_until(_done(*jobs.values()), 30, "every job finished")
    expected = {
        "plain": ["succeeded"],
        "fails_once": ["retrying", "succeeded"],
        "always_fails": ["retrying", "failed"],
        "snoozes_once": ["snoozed", "succeeded"],
    }

    def told(hook):
        entries = [e for e in read_log(hook_log) if e["hook"] == hook]
        return {
            name: [e["outcome"] for e in entries if e["job_id"] == id_]
            for name, id_ in jobs.items()
        }

    # after_finish runs after the job is written, finished: wait for its last entries.
    wait_until(lambda: told("aafter_finish") == told("after_finish") == expected, 10, "hooks")
    entries = read_log(hook_log)
    # A sync after_finish runs in a job thread, never on the loop; wrap_run too, for sync tasks.
    assert {e["thread"].rsplit("-", 1)[0] for e in entries if e["hook"] == "after_finish"} == {
        "leasequeue-job"
    }
    wrapped = [e for e in entries if e["hook"] == "wrap" and e["job_id"] == jobs["fails_once"]]
    assert [(e["attempt"], e["raised"]) for e in wrapped] == [(1, "ValueError"), (2, None)]
    assert wrapped[1]["thread"].startswith("leasequeue-job")
    assert workers.stop() == 0


def test_broken_hooks_are_logged_by_name_and_lose_nothing(start_workers, tmp_path):
    hook_log = tmp_path / "hooks.jsonl"
    ok, failing = plain.enqueue(7).id, always_fails.enqueue().id
    workers = start_workers(
        options={**LONG_LEASE, "hooks": [*BROKEN, "tests.support.hook_examples.RecordingHook"]},
        env={"LEASEQUEUE_TEST_HOOK_LOG": str(hook_log)},
    )
    wait_until(_done(ok, failing), 30, "both jobs finished")
    assert Job.objects.get(pk=ok).status == "succeeded" and Job.objects.get(pk=ok).result == 7
    assert Job.objects.get(pk=failing).status == "failed"
    # The worker goes on: a job enqueued now runs too.
    later = plain.enqueue(8).id
    wait_until(_done(later), 30, "the job after the failures")
    wait_until(lambda: len(read_log(hook_log)) >= 3 + 3, 10, "the recording hook's entries")
    assert workers.stop() == 0
    log = workers.log()
    for line in (
        "Hook tests.support.hook_examples.BrokenHook failed in wrap_run for job",
        "Hook tests.support.hook_examples.BrokenExitHook failed in wrap_run (on exit) for job",
        "Hook tests.support.hook_examples.BrokenHook failed in after_finish for job",
        "Hook tests.support.hook_examples.BrokenExitHook failed in after_finish for job",
    ):
        assert line in log, line
    assert "RuntimeError: wrap_run is broken" in log  # with the traceback
    assert "could not record its outcome" not in log and "service died" not in log
    outcomes = [e["outcome"] for e in read_log(hook_log) if e["hook"] == "after_finish"]
    assert sorted(outcomes) == ["failed", "retrying", "succeeded", "succeeded"]


def test_every_log_record_about_a_job_carries_its_fields_as_json(start_workers, tmp_path):
    json_log = tmp_path / "workers.jsonl"
    job_id = fails_once.enqueue().id
    workers = start_workers(options=LONG_LEASE, env={"LEASEQUEUE_TEST_JSON_LOG": str(json_log)})
    wait_until(_done(job_id), 30, "the job finished")
    assert workers.stop() == 0
    records = [json.loads(line) for line in json_log.read_text().splitlines()]
    about_job = [
        r for r in records if job_id in r["message"] or r["logger"] == "tests.support.tasks.hooks"
    ]
    fields = {"job_id": job_id, "task": "tests.support.tasks.hooks.fails_once", "queue": "default"}
    by_message = {r["message"]: r for r in about_job}
    # The task's own lines, one per attempt, and the worker's line about the failed attempt.
    assert by_message["attempt 1 starts"] == {
        **by_message["attempt 1 starts"],
        **fields,
        "attempt": 1,
    }
    assert by_message["attempt 2 starts"] == {
        **by_message["attempt 2 starts"],
        **fields,
        "attempt": 2,
    }
    [failed] = [r for r in about_job if "attempt 1 failed" in r["message"]]
    assert failed["level"] == logging.getLevelName(logging.WARNING)
    assert {name: failed.get(name) for name in (*fields, "attempt")} == {**fields, "attempt": 1}
    assert all(r.get("job_id") == job_id for r in about_job), about_job
    # Lines about no job carry no job fields.
    started = [r for r in records if r["message"].startswith("Worker ")]
    assert started and all("job_id" not in r for r in started)
