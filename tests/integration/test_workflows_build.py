"""Workflows built and enqueued: one transaction, waiting steps, dependency rows, clear errors
(no worker involved)."""

import threading
from collections import Counter
from uuid import UUID

import psycopg
import pytest
from django.db import connection, transaction

from django_leasequeue import (
    InvalidWorkflow,
    Step,
    Workflow,
    WorkflowStatus,
    chain,
    chord,
    group,
    step,
)
from django_leasequeue.models import Job, StepDependency, WorkflowRun
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql import workflows as workflows_sql
from django_leasequeue.sql.executor import execute
from django_leasequeue.sql.records import Lease
from tests.acceptance import harness
from tests.acceptance.harness import wait_until
from tests.support.helpers import (
    rows_read,
    rows_read_inside,
    statistics_of_finished_jobs,
    try_claim_batch,
)
from tests.support.tasks.workflows import (
    add_one,
    explode,
    fetch,
    length,
    noop,
    on_complete,
    per_tenant,
    report,
    total,
)

pytestmark = pytest.mark.django_db(transaction=True)


def _steps(handle) -> dict[str, Job]:
    return {job.step_name: job for job in Job.objects.filter(workflow_id=handle.id)}


def test_a_workflow_is_written_whole_with_its_roots_queued_and_the_rest_waiting():
    wf = Workflow("import-42")
    first = wf.add(fetch, args=["https://a"])
    second = wf.add(length, args=["abc"], after=[first])
    wf.add(noop, after=[second], run_if="finished", name="cleanup")
    wf.on_success(report)
    handle = wf.enqueue()
    assert handle.status == WorkflowStatus.RUNNING
    steps = _steps(handle)
    assert {name: job.status for name, job in steps.items()} == {
        "fetch": "queued",
        "length": "waiting",
        "cleanup": "waiting",
        "on_success": "waiting",
    }
    assert steps["length"].upstream is None
    assert steps["cleanup"].run_if == "finished"
    assert steps["on_success"].run_if == "on_success"
    assert (steps["fetch"].has_dependents, steps["cleanup"].has_dependents) == (True, True)
    # The callback waits for every other step.
    parents = StepDependency.objects.filter(child_id=steps["on_success"].id).order_by("position")
    assert [edge.parent_id for edge in parents] == [
        steps["fetch"].id,
        steps["length"].id,
        steps["cleanup"].id,
    ]
    row = WorkflowRun.objects.get(pk=handle.id)
    assert (row.name, row.steps_total, row.steps_unfinished) == ("import-42", 4, 4)


def test_a_rolled_back_transaction_leaves_no_workflow():
    with pytest.raises(RuntimeError), transaction.atomic():
        chain(step(fetch, "https://a"), step(length)).enqueue()
        raise RuntimeError("roll back")
    assert not WorkflowRun.objects.exists() and not Job.objects.exists()
    assert not StepDependency.objects.exists()


def test_canvas_steps_receive_upstream_results_as_celery_does():
    chained = _steps(chain(step(fetch, "u"), step(length), step(add_one)).enqueue())
    assert (chained["length"].upstream, chained["add_one"].upstream) == ("chain", "chain")
    assert chained["length"].args == []
    chorded = _steps(chord(group(step(fetch, "a"), step(fetch, "b")), step(total)).enqueue())
    assert set(chorded) == {"fetch", "fetch_2", "total"}
    assert chorded["total"].upstream == "chord"
    assert StepDependency.objects.filter(child_id=chorded["total"].id).count() == 2


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Workflow().enqueue(), "no steps"),
        (lambda: Workflow().add(fetch, after=[Workflow().add(noop)]), "another workflow"),
        (lambda: Workflow().add(fetch, run_if="sometimes"), "run_if must be one of"),
        (lambda: _two_named("x"), "Two steps are named 'x'"),
        (lambda: Workflow().add(print), "runs a Task"),
        (lambda: chain(), "at least one step"),
        (lambda: chain(step(fetch, "a"), step(explode, "too", "many")).enqueue(), "signature"),
        (lambda: chain(step(fetch, "\ud800")).enqueue(), "lone surrogate"),
    ],
)
def test_what_cannot_be_a_workflow_is_refused_and_nothing_is_written(build, message):
    with pytest.raises((InvalidWorkflow, TypeError), match=message):
        build()
    assert not WorkflowRun.objects.exists() and not Job.objects.exists()


def test_a_step_refused_after_thousands_of_good_ones_leaves_nothing():
    """A refusal late in a big workflow writes nothing, and the connection goes on."""
    members = [step(fetch, f"https://{n}") for n in range(3000)]
    members.append(step(fetch, "\ud800"))
    with pytest.raises(TypeError, match="lone surrogate"):
        chord(group(*members), step(total)).enqueue()
    assert not WorkflowRun.objects.exists() and not Job.objects.exists()
    assert not StepDependency.objects.exists()
    # The connection is usable again at once.
    handle = chain(step(fetch, "https://a"), step(length)).enqueue()
    assert set(_steps(handle)) == {"fetch", "length"}


class _ReadsTheDatabase:
    """An argument whose repr queries, as a model's ``__str__`` reading a relation does."""

    def __repr__(self) -> str:
        return f"<one of {Job.objects.count()} jobs>"


@pytest.mark.timeout(30)
def test_an_argument_whose_repr_reads_the_database_is_refused_naming_it():
    """Steps are checked before any row is written: the message's repr may query (inside
    the COPY, on the connection the COPY holds, it would wait for ever)."""
    with pytest.raises(TypeError, match=r"args\[0\] = <one of 0 jobs> is not JSON"):
        chain(step(fetch, "u"), step(length, _ReadsTheDatabase())).enqueue()
    assert not WorkflowRun.objects.exists() and not Job.objects.exists()


@pytest.mark.timeout(30)
def test_a_steps_key_function_may_read_the_database_while_the_workflow_is_written():
    """Key functions run before any row is written: a query of theirs inside the COPY would
    wait for ever on the connection the COPY holds."""
    handle = group(*(step(per_tenant, n) for n in range(3))).enqueue()
    steps = _steps(handle)
    assert sorted(job.concurrency_key for job in steps.values()) == [
        "task:tests.support.tasks.workflows.per_tenant:tenant:0:0",
        "task:tests.support.tasks.workflows.per_tenant:tenant:0:1",
        "task:tests.support.tasks.workflows.per_tenant:tenant:0:2",
    ]


def _two_named(name):
    wf = Workflow()
    wf.add(noop, name=name)
    wf.add(noop, name=name)


def _set_status(job: Job, status: str) -> None:
    """What a worker's fenced write does to the row's status (the trigger sees the same)."""
    Job.objects.filter(pk=job.pk).update(status=status)


def test_statuses_drive_the_release_the_cascade_the_revival_and_the_workflow_status():
    from django_leasequeue import operations

    wf = Workflow()
    root = wf.add(fetch, args=["a"])
    middle = wf.add(noop, after=[root])
    wf.add(noop, after=[middle], name="last")
    wf.add(noop, after=[root], run_if="finished", name="cleanup")
    handle = wf.enqueue()
    steps = _steps(handle)

    _set_status(steps["fetch"], "failed")
    now = _steps(handle)
    assert (now["noop"].status, now["last"].status) == ("cancelled", "cancelled")
    assert now["noop"].errors[-1]["message"] == "upstream step fetch failed"
    assert now["noop"].errors[-1]["exception_class_path"].endswith("UpstreamFailed")
    assert now["last"].errors[-1]["message"] == "upstream step noop was cancelled"
    assert now["cleanup"].status == "queued"  # runs whatever fetch did
    _set_status(now["cleanup"], "succeeded")
    run = WorkflowRun.objects.get(pk=handle.id)
    assert (run.status, run.steps_unfinished, run.steps_failed) == ("failed", 0, 3)
    assert run.finished_at is not None

    operations.retry([steps["fetch"].id], "default")  # the admin's retry
    now = _steps(handle)
    assert (now["fetch"].status, now["noop"].status, now["last"].status) == (
        "queued",
        "waiting",
        "waiting",
    )
    assert WorkflowRun.objects.get(pk=handle.id).status == "running"
    _set_status(now["fetch"], "succeeded")
    assert _steps(handle)["noop"].status == "queued"
    _set_status(now["noop"], "succeeded")
    _set_status(now["last"], "succeeded")
    run = WorkflowRun.objects.get(pk=handle.id)
    assert (run.status, run.steps_unfinished, run.steps_failed) == ("succeeded", 0, 0)


def test_an_unfinished_step_cannot_be_deleted_and_a_cancelled_workflow_ends_cancelled():
    from django_leasequeue import operations

    handle = chain(step(fetch, "a"), step(length)).enqueue()
    steps = _steps(handle)
    report = operations.delete([steps["fetch"].id, steps["length"].id], "default")
    assert report.changed_count == 0
    assert report.skipped == {
        "a workflow step not started: cancel it first": 1,
        "a waiting workflow step: cancel it first": 1,
    }
    assert handle.cancel() == {"cancelled": 2, "cancel_requested": 0}
    handle.refresh()
    assert handle.status == WorkflowStatus.CANCELLED
    assert operations.delete([steps["length"].id], "default").changed_count == 1


def test_prunejobs_keeps_the_finished_steps_of_a_running_workflow():
    from datetime import timedelta
    from io import StringIO

    from django.core.management import call_command
    from django.utils import timezone

    handle = chain(step(fetch, "a"), step(length)).enqueue()
    steps = _steps(handle)
    _set_status(steps["fetch"], "succeeded")
    month_ago = timezone.now() - timedelta(days=30)
    Job.objects.filter(pk=steps["fetch"].pk).update(finished_at=month_ago)
    plain = noop.enqueue()
    Job.objects.filter(pk=plain.id).update(status="succeeded", finished_at=month_ago)
    call_command("prunejobs", "--days", "7", stdout=StringIO())
    assert set(Job.objects.values_list("step_name", flat=True)) == {"fetch", "length"}


def test_a_released_step_keeps_a_later_run_after_of_its_own():
    from datetime import timedelta

    from django.utils import timezone

    later = timezone.now() + timedelta(hours=1)
    handle = chain(step(fetch, "a"), step(length.using(run_after=later))).enqueue()
    _set_status(_steps(handle)["fetch"], "succeeded")
    released = _steps(handle)["length"]
    assert (released.status, released.run_after) == ("queued", later)


def test_prunejobs_deletes_a_finished_workflow_once_its_steps_are_gone():
    from datetime import timedelta
    from io import StringIO

    from django.core.management import call_command
    from django.utils import timezone

    month_ago = timezone.now() - timedelta(days=30)
    old, recent, kept_step = (chain(step(fetch, "a"), step(length)).enqueue() for _ in range(3))
    for handle in (old, recent, kept_step):
        for job in _steps(handle).values():
            _set_status(job, "succeeded")
    WorkflowRun.objects.filter(pk__in=[old.id, kept_step.id]).update(finished_at=month_ago)
    WorkflowRun.objects.filter(pk=recent.id).update(finished_at=timezone.now())
    Job.objects.filter(workflow_id__in=[old.id, recent.id]).update(finished_at=month_ago)
    # One step of kept_step ended recently: it stays, and so does its workflow.
    Job.objects.filter(workflow_id=kept_step.id, step_name="fetch").update(finished_at=month_ago)
    Job.objects.filter(workflow_id=kept_step.id, step_name="length").update(
        finished_at=timezone.now()
    )
    out = StringIO()
    call_command("prunejobs", "--days", "7", stdout=out)
    assert out.getvalue().splitlines() == [
        "Deleted 5 finished jobs older than 7 days.",
        "Deleted 1 finished workflow left without steps.",
    ]
    left = {str(pk) for pk in WorkflowRun.objects.values_list("pk", flat=True)}
    assert left == {str(recent.id), str(kept_step.id)}


def test_a_steps_expiry_counts_from_when_it_becomes_due():
    from datetime import timedelta

    from django.utils import timezone

    handle = chain(
        step(fetch.using(expires_after=30), "a"), step(length.using(expires_after=60))
    ).enqueue()
    steps = _steps(handle)
    first, second = steps["fetch"], steps["length"]
    assert first.expires_at - first.run_after == timedelta(seconds=30)
    # The second step waited two hours for its parent: its expiry does not count that wait.
    two_hours_ago = timezone.now() - timedelta(hours=2)
    Job.objects.filter(pk=second.pk).update(
        run_after=two_hours_ago, expires_at=two_hours_ago + timedelta(seconds=60)
    )
    before = timezone.now()
    _set_status(first, "succeeded")
    released = Job.objects.get(pk=second.pk)
    assert released.status == "queued"
    assert released.run_after >= before - timedelta(seconds=1)
    assert released.expires_at - released.run_after == timedelta(seconds=60)


def test_finding_released_steps_reads_each_child_by_its_key_on_a_freshly_filled_table():
    """Planned on the statistics of a table of finished jobs (since emptied, then filled with a
    chord), the lookup of the callback walked every waiting job instead (1.8 ms per completed
    batch while 10,000 members drained): few claimable jobs made their index look cheap."""
    statistics_of_finished_jobs(noop.get_backend())
    chord(group(*(step(noop) for _ in range(10_000))), step(length)).enqueue()
    claimed = try_claim_batch(limit=20)
    execute(jobs_sql.complete_many([(job.lease, "null") for job in claimed]))
    statement = workflows_sql.released_steps([job.id for job in claimed])
    assert rows_read(statement) <= 20  # the callback, once per distinct child
    assert execute(statement) == []  # it waits for 9,980 more parents


def test_a_batch_of_steps_is_completed_by_key_among_many_running_ones():
    """Its cached plan joined the batch to the running-jobs index, which the statistics of a
    table of finished jobs make look small: every running step read to complete 10."""
    statistics_of_finished_jobs(noop.get_backend())
    chord(group(*(step(noop) for _ in range(3_000))), step(length)).enqueue()
    claimed = try_claim_batch(limit=3_000)
    assert len(claimed) == 3_000
    completion = jobs_sql.complete_steps([(job.lease, "null") for job in claimed[:10]])
    assert rows_read_inside(completion) <= 40  # its 10 updated, and the callback locked
    assert execute(completion).applied == {job.id for job in claimed[:10]}


def test_step_completions_planned_on_a_nearly_empty_table_find_a_later_backlogs_by_key():
    """PL/pgSQL caches a generic plan after five calls; made while the table held a few jobs
    (a fresh install), it must not scan the whole table once a backlog has arrived."""
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE leasequeue_job CASCADE")
        cursor.execute("ANALYZE leasequeue_job")
    chord(group(*(step(noop) for _ in range(8))), step(length)).enqueue()
    for job in try_claim_batch(limit=8):
        execute(jobs_sql.complete_steps([(job.lease, "null")]))
    chord(group(*(step(noop) for _ in range(3_000))), step(length)).enqueue()
    claimed = [job for job in try_claim_batch(limit=3_001) if job.task_path == noop.module_path]
    completion = jobs_sql.complete_steps([(job.lease, "null") for job in claimed[:10]])
    assert rows_read_inside(completion) <= 40  # its 10 updated, and the callback locked
    assert execute(completion).applied == {job.id for job in claimed[:10]}


def test_the_release_locks_a_batchs_children_by_key_whatever_join_the_planner_prefers():
    """The lock of a batch's children was a join, and a plan PL/pgSQL cached for it merged
    them with an ordered scan of the whole job table: 9,800 rows read per batch late in a
    chord of 10,000 (the drain at half the rate of plain jobs). It now reads them by key,
    whatever join the planner would choose: here, one that prefers a merge."""
    chord(group(*(step(noop) for _ in range(3_000))), step(length)).enqueue()
    claimed = try_claim_batch(limit=3_000)
    execute(jobs_sql.complete_steps([(job.lease, "null") for job in claimed[:2_000]]))
    with connection.cursor() as cursor:
        cursor.execute("SET enable_nestloop = off")
        cursor.execute("SET enable_hashjoin = off")
    try:
        completion = jobs_sql.complete_steps([(job.lease, "null") for job in claimed[2_000:2_010]])
        assert rows_read_inside(completion, of_statement="FOR UPDATE") <= 2  # the callback
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET enable_nestloop")
            cursor.execute("RESET enable_hashjoin")


def _workflow_books(handle) -> tuple[str, int, int]:
    run = WorkflowRun.objects.get(pk=handle.id)
    return run.status, run.steps_unfinished, run.steps_failed


def test_a_batch_of_steps_completed_in_one_statement_keeps_the_books_and_names_what_it_released():
    first = chord(group(*(step(noop) for _ in range(3))), step(length)).enqueue()
    second = chord(group(step(noop), step(noop)), step(length)).enqueue()
    claimed = try_claim_batch(limit=20)
    assert len(claimed) == 5
    in_first = [job for job in claimed if str(job.workflow_id) == str(first.id)]
    last_of_second, *rest_of_second = [
        job for job in claimed if str(job.workflow_id) == str(second.id)
    ]

    stale = Lease(last_of_second.id, last_of_second.lease.lease_version + 1)
    batch = [(job.lease, "1") for job in in_first + rest_of_second] + [(stale, "1")]
    applied, released = execute(jobs_sql.complete_steps(batch))

    assert applied == {job.id for job in in_first + rest_of_second}  # not the stale lease
    first_callback = _steps(first)["length"]
    assert released == [("default", str(first_callback.id))]
    assert first_callback.status == "queued"
    assert _steps(second)["length"].status == "waiting"
    assert _workflow_books(first) == ("running", 1, 0)  # each step counted once
    assert _workflow_books(second) == ("running", 2, 0)
    assert set(
        StepDependency.objects.filter(parent_id__in=applied).values_list("outcome", flat=True)
    ) == {"succeeded"}

    _, released = execute(jobs_sql.complete_steps([(last_of_second.lease, "2")]))
    assert released == [("default", str(_steps(second)["length"].id))]
    assert _workflow_books(second) == ("running", 1, 0)


def test_after_a_batch_completion_the_trigger_keeps_the_books_of_the_same_transaction():
    """The step trigger skips only the rows complete_steps writes itself: a failure written
    later in the same transaction is still counted, and cancels what waited for it."""
    handle = chord(group(step(noop), step(noop)), step(length)).enqueue()
    one, other = try_claim_batch(limit=20)
    with transaction.atomic():
        execute(jobs_sql.complete_steps([(one.lease, "null")]))
        _set_status(Job.objects.get(pk=other.id), "failed")
    assert _workflow_books(handle) == ("failed", 0, 2)  # the failed step and the callback
    callback = _steps(handle)["length"]
    assert callback.status == "cancelled"
    assert callback.errors[-1]["message"].startswith("upstream step noop")


def test_task_enqueued_is_sent_for_each_step_once_the_workflow_commits():
    from django_leasequeue.tasks_framework import task_enqueued

    received = []

    def receiver(sender, task_result, **kwargs):
        received.append((task_result.id, task_result.status.name, task_result.args))

    task_enqueued.connect(receiver)
    try:
        with transaction.atomic():
            handle = chain(step(fetch, "a"), step(length)).enqueue()
            assert received == []  # not before the commit
    finally:
        task_enqueued.disconnect(receiver)
    assert received == [
        (handle.step_ids["fetch"], "READY", ["a"]),
        (handle.step_ids["length"], "READY", []),
    ]


def test_the_release_probes_the_unsettled_index_even_on_statistics_of_a_fresh_chord():
    """Analyzed just after a chord was enqueued, the statistics say every dependency row is
    the callback's and unsettled: a sequential scan then looks as if it stopped at its first
    row, and reads every row settled since. The release must not scan the table."""
    chord(group(*(step(noop) for _ in range(5_000))), step(length)).enqueue()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE leasequeue_dependency")
    claimed = try_claim_batch(limit=5_000)
    execute(jobs_sql.complete_steps([(job.lease, "null") for job in claimed[:4_990]]))
    with transaction.atomic():  # the last batch, as a worker's
        scans_before = _sequential_scans_of_dependencies()
        execute(jobs_sql.complete_steps([(job.lease, "null") for job in claimed[4_990:]]))
        assert _sequential_scans_of_dependencies() == scans_before
    assert _steps_by_status(Job.objects.filter(step_name="length")) == {"queued": 1}


def _sequential_scans_of_dependencies() -> int:
    """This backend's sequential scans of the dependency table not yet reported (those of this
    transaction among them)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relname = 'leasequeue_dependency'"
        )
        return cursor.fetchone()[0]


def _steps_by_status(jobs) -> dict[str, int]:
    return dict(Counter(jobs.values_list("status", flat=True)))


def test_a_step_cancelled_by_a_batch_completion_is_counted_and_ends_the_workflow():
    """The batch's own rows are skipped by the step trigger, not what its release changes: an
    on_failure callback cancelled because every step succeeded is counted by the trigger."""
    wf = Workflow()
    wf.add(noop)
    wf.add(noop)
    wf.on_failure(report)
    handle = wf.enqueue()
    claimed = try_claim_batch(limit=20)
    assert len(claimed) == 2
    execute(jobs_sql.complete_steps([(job.lease, "null") for job in claimed]))
    assert _workflow_books(handle) == ("succeeded", 0, 0)
    callback = _steps(handle)["on_failure"]
    assert callback.status == "cancelled"
    assert callback.errors[-1]["message"] == "no step of the workflow failed"


def test_an_operator_s_cancel_racing_a_completion_waits_for_it_instead_of_deadlocking():
    """A worker's completion locks its steps, then their workflow's row; the cancel locks the
    workflow's running steps before its row, in the same order, so it waits for the completion
    to commit. (Locking the row first, it deadlocked, and PostgreSQL ended one of the two.)"""
    from django_leasequeue.operations import cancel_workflow

    handle = chord(group(step(noop), step(noop)), step(length)).enqueue()
    first, other = try_claim_batch(limit=20)
    # A worker's transaction held open mid-completion: its step locked, the workflow not yet.
    worker = psycopg.connect(harness.test_database_url())
    worker.execute("SELECT 1 FROM leasequeue_job WHERE id = %s FOR UPDATE", [first.id])
    outcome: dict = {}

    def operator() -> None:
        try:
            outcome["cancel"] = cancel_workflow(handle.id, "default")
        except Exception as exc:  # the assertion below shows it
            outcome["cancel"] = exc
        finally:
            connection.close()

    cancelling = threading.Thread(target=operator)
    cancelling.start()
    wait_until(lambda: _lock_waits() > 0, 10, "the cancel to wait for the step's lock")
    try:
        worker.execute(
            "SELECT completed FROM leasequeue_complete_steps(%s::uuid[], '{1}', '{null}')",
            [[first.id]],
        )
        worker.commit()
    finally:
        worker.close()
        cancelling.join(30)
    assert outcome["cancel"] == {"cancelled": 1, "cancel_requested": 1}
    assert Job.objects.get(pk=first.id).status == "succeeded"
    assert Job.objects.get(pk=other.id).cancel_requested
    assert _steps(handle)["length"].status == "cancelled"


def _lock_waits() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
        return cursor.fetchone()[0]


async def test_released_steps_handed_to_the_waker_are_pushed_to_their_queues_without_a_lookup():
    from concurrent.futures import ThreadPoolExecutor

    from django_leasequeue.runtime.workflow_steps import ReleasedStepsWaker

    wakeups = noop.get_backend().wakeups
    while wakeups.pop(["default", "low"], 1000, 0):  # what earlier tests left there
        pass
    with ThreadPoolExecutor(1) as redis_calls:
        # No database: released steps already known need no query (a lookup would fail here).
        waker = ReleasedStepsWaker(None, wakeups, redis_calls)  # type: ignore[arg-type]
        waker.add_released([("default", "01a233d7-2761-7415-8ccb-c86237fca31d")])
        waker.add_released([("low", "01a233d7-2761-7415-8ccb-c86237fca31e")])
        await waker.flush()
    assert wakeups.pop(["default"], 10, 0) == [b"01a233d7-2761-7415-8ccb-c86237fca31d"]
    assert wakeups.pop(["low"], 10, 0) == [b"01a233d7-2761-7415-8ccb-c86237fca31e"]


# What Workflow.add takes in after=, and what the handle and the callbacks are called


@pytest.mark.parametrize(
    ("index", "name"),
    [(-1, "x"), (1, "x"), (2, "x"), (99, "x"), (0, "fetch")],  # the last: a real step's twin
)
def test_after_refuses_a_step_built_by_hand_naming_it(index, name):
    """Only the Step objects add() returned: a hand-built one could point at itself (a step
    waiting for ever), at a callback's index, or at nothing."""
    wf = Workflow()
    wf.add(fetch, args=["a"])
    wf.add(length, args=["b"])
    wf.on_failure(report)  # index 2
    fake = Step(workflow=wf, index=index, name=name)
    expected = (
        f"Step {name!r} (index {index}) was not returned by this workflow's add(): after= "
        "takes the Steps that add() returned, not Steps built by hand."
    )
    with pytest.raises(InvalidWorkflow) as refused:
        wf.add(noop, after=[fake])
    assert str(refused.value) == expected
    with pytest.raises(InvalidWorkflow) as refused:
        chained = Workflow()
        chained.add(fetch, args=["a"])
        chained.merge(group(step(noop)), after=[Step(workflow=chained, index=index, name=name)])
    assert str(refused.value) == expected
    assert [definition.name for definition in wf.steps] == ["fetch", "length"]
    handle = wf.enqueue()
    assert set(handle.step_ids) == {"fetch", "length", "on_failure"}


def test_after_refuses_a_callback_and_the_steps_of_another_workflow():
    wf = Workflow()
    first = wf.add(fetch, args=["a"])
    callback = wf.on_complete(noop)
    with pytest.raises(InvalidWorkflow, match=r"^Step 'on_complete' is a callback"):
        wf.add(noop, after=[callback])
    other = Workflow()
    with pytest.raises(InvalidWorkflow, match=r"^Step 'fetch' belongs to another workflow"):
        other.add(noop, after=[first])
    with pytest.raises(InvalidWorkflow, match=r"^Step 'fetch' belongs to another workflow"):
        other.add(noop, after=[Step(workflow=wf, index=0, name="fetch")])


def test_a_bad_run_if_is_refused_listing_the_values_a_user_passes():
    with pytest.raises(InvalidWorkflow) as refused:
        Workflow().add(fetch, run_if="sometimes")
    assert str(refused.value) == "run_if must be one of 'succeeded', 'finished', not 'sometimes'."


def test_the_handle_holds_every_step_s_result_from_enqueue_as_refresh_reads_it():
    wf = Workflow()
    first = wf.add(fetch, args=["https://a"], kwargs={"seconds": 0})
    wf.add(length, args=["abc"], after=[first])
    wf.on_complete(noop)
    handle = wf.enqueue()
    assert list(handle.steps) == list(handle.step_ids) == ["fetch", "length", "on_complete"]
    enqueued = {name: _comparable(result) for name, result in handle.steps.items()}
    assert {name: fields["id"] for name, fields in enqueued.items()} == handle.step_ids
    assert enqueued["fetch"]["args"] == ["https://a"]
    assert enqueued["fetch"]["kwargs"] == {"seconds": 0}
    assert {fields["status"] for fields in enqueued.values()} == {"READY"}
    handle.refresh()
    assert {name: _comparable(result) for name, result in handle.steps.items()} == enqueued


def _comparable(result) -> dict:
    """What a step's TaskResult says, as enqueue and refresh() both know it."""
    return {
        "id": result.id,
        "status": result.status.name,
        "task": result.task.module_path,
        "args": result.args,
        "kwargs": result.kwargs,
        "backend": result.backend,
        "enqueued_at": result.enqueued_at,
        "errors": result.errors,
    }


def test_callbacks_are_named_after_their_role_and_no_step_may_take_those_names():
    wf = Workflow()
    wf.add(noop)
    wf.add(on_complete)  # a task named like a callback: its step is numbered past the name
    assert wf.on_success(report).name == "on_success"
    assert wf.on_failure(report).name == "on_failure"
    assert wf.on_complete(report).name == "on_complete"
    handle = wf.enqueue()
    assert list(handle.step_ids) == [
        "noop",
        "on_complete_2",
        "on_success",
        "on_failure",
        "on_complete",
    ]
    assert _steps(handle)["on_failure"].run_if == "on_failure"
    for reserved in ("on_success", "on_failure", "on_complete"):
        with pytest.raises(InvalidWorkflow) as refused:
            Workflow().add(noop, name=reserved)
        assert str(refused.value) == (
            f"A step cannot be named {reserved!r}: that is the name of the workflow's "
            f"{reserved} callback."
        )


# Cancelling: the whole workflow, or one of its steps


def _callbacks_workflow():
    """fetch, then needs_it after it; and all three callbacks."""
    wf = Workflow("cancelled")
    first = wf.add(fetch, args=["a"])
    wf.add(noop, after=[first], name="needs_it")
    wf.on_success(noop)
    wf.on_failure(report)
    wf.on_complete(report)
    return wf.enqueue()


def test_cancelling_the_workflow_cancels_its_callbacks_too():
    """The operator asked to stop everything: no callback runs, not even on_complete."""
    handle = _callbacks_workflow()
    assert handle.cancel() == {"cancelled": 5, "cancel_requested": 0}
    handle.refresh()
    assert handle.status == WorkflowStatus.CANCELLED
    assert {name: job.status for name, job in _steps(handle).items()} == {
        "fetch": "cancelled",
        "needs_it": "cancelled",
        "on_success": "cancelled",
        "on_failure": "cancelled",
        "on_complete": "cancelled",
    }
    assert not try_claim_batch(limit=20)


def test_cancelling_one_step_is_that_step_s_outcome_so_on_failure_and_on_complete_run():
    """A step cancelled on its own (backend.cancel, the job admin's Cancel) ends as a failed
    one does: what needed it is cancelled, on_failure and on_complete are released, and the
    workflow ends FAILED once they have run."""
    handle = _callbacks_workflow()
    backend = fetch.get_backend()
    assert backend.cancel([handle.step_ids["fetch"]]) == {
        UUID(handle.step_ids["fetch"]): "cancelled"
    }
    steps = _steps(handle)
    assert {name: job.status for name, job in steps.items()} == {
        "fetch": "cancelled",
        "needs_it": "cancelled",
        "on_success": "cancelled",
        "on_failure": "queued",
        "on_complete": "queued",
    }
    assert steps["needs_it"].errors[-1]["message"] == "upstream step fetch was cancelled"
    assert steps["on_success"].errors[-1]["message"] == "upstream step fetch was cancelled"
    claimed = try_claim_batch(limit=20)
    assert sorted(str(job.id) for job in claimed) == sorted(
        [handle.step_ids["on_failure"], handle.step_ids["on_complete"]]
    )
    execute(jobs_sql.complete_steps([(job.lease, "null") for job in claimed]))
    handle.refresh()
    assert handle.status == WorkflowStatus.FAILED
