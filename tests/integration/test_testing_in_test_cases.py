"""The testing helpers in Django's own test cases: inside ``TestCase``'s transaction nothing
leaks from one test to the next, async tests drain with ``adrain``, and neither enqueue nor the
drain needs Redis (``TransactionTestCase``, where enqueues commit and try to wake workers)."""

from django.db import connection
from django.test import TestCase, TransactionTestCase, override_settings

from django_leasequeue.models import Job
from django_leasequeue.tasks_framework import task_backends
from django_leasequeue.testing import (
    adrain,
    arun_job,
    assert_enqueued,
    drain,
    enqueued_jobs,
    refute_enqueued,
    run_job,
)
from tests.support.models import Receipt
from tests.support.settings import CACHES, TASKS
from tests.support.tasks import testing as tasks

# Nothing listens on port 1: every Redis call is refused at once.
REDIS_DOWN = {"default": {**CACHES["default"], "LOCATION": "redis://127.0.0.1:1/0"}}


class NothingLeaksBetweenTests(TestCase):
    """Each test enqueues, and drains a task that enqueues more; the next one starts clean.
    The two run in either order; each checks it starts with no job and no row."""

    def _starts_clean_then_leaves_jobs_and_rows(self) -> None:
        self.assertEqual(enqueued_jobs(), [])
        self.assertFalse(Job.objects.exists())
        self.assertFalse(Receipt.objects.exists())
        tasks.counts_down.enqueue(2)
        tasks.writes_receipts.enqueue(2)
        self.assertEqual(drain(with_recursion=False).ran, 2)
        assert_enqueued(tasks.counts_down, args=[1])  # enqueued by the drained task
        self.assertEqual(Receipt.objects.count(), 2)

    def test_one(self) -> None:
        self._starts_clean_then_leaves_jobs_and_rows()

    def test_two(self) -> None:
        self._starts_clean_then_leaves_jobs_and_rows()


class AsyncTests(TestCase):
    async def test_adrain_runs_sync_and_async_tasks_seeing_the_tests_rows(self) -> None:
        await Receipt.objects.acreate(
            job_id="00000000-0000-0000-0000-000000000002", written_by="testing"
        )
        sync_job = await tasks.counts_receipts.aenqueue()
        async_job = await tasks.acounts_receipts.aenqueue()
        done = await adrain()
        self.assertEqual(done.succeeded, 2)
        backend = task_backends["default"]
        for result in (sync_job, async_job):
            stored = await backend.aget_result(result.id)
            self.assertEqual(stored.return_value, 1)

    async def test_arun_job_returns_the_value_and_raises_the_exception(self) -> None:
        self.assertEqual(
            await arun_job(tasks.aworks_with_context), {"attempt": 1, "checkpoint": {"half": True}}
        )
        with self.assertRaisesMessage(ValueError, "async kaput"):
            await arun_job(tasks.fails, "async kaput")


@override_settings(CACHES=REDIS_DOWN, TASKS={"default": {**TASKS["default"]}})
class RedisDownTransactionTests(TransactionTestCase):
    """Enqueues commit here, so each tries to wake workers through Redis, which is down."""

    def test_enqueue_and_drain_need_no_redis(self) -> None:
        self.assertFalse(connection.in_atomic_block)
        result = tasks.send_welcome.enqueue(4)
        tasks.counts_down.enqueue(1)
        assert_enqueued(tasks.send_welcome, args=[4])
        done = drain()
        self.assertEqual((done.ran, done.succeeded), (3, 3))
        refute_enqueued(tasks.counts_down)
        self.assertEqual(
            task_backends["default"].get_result(result.id).return_value, "welcome 4 (en)"
        )
        self.assertEqual(run_job(tasks.returns, 5), 5)


@override_settings(CACHES=REDIS_DOWN, TASKS={"default": {**TASKS["default"]}})
class RedisDownTests(TestCase):
    def test_enqueue_and_drain_need_no_redis_in_a_test_case_either(self) -> None:
        tasks.counts_down.enqueue(2)
        self.assertEqual(drain().succeeded, 3)
