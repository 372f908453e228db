"""A job's ``meta`` on every enqueue path (one insert, a batch, COPY, workflow steps, a
schedule's "run now"), through every claim, and hooks' ``before_enqueue`` in the enqueue's
transaction."""

import pytest
from django.db import transaction

from django_leasequeue import chain, step
from django_leasequeue.exceptions import InvalidTaskArguments
from django_leasequeue.models import Job
from django_leasequeue.schedules.declaration import declaration_of
from django_leasequeue.schedules.firing import run_now
from django_leasequeue.sql.executor import execute
from django_leasequeue.sql.jobs import database_now
from django_leasequeue.sql.schedules import sync_schedules
from django_leasequeue.tasks_framework import task_backends
from tests.periodic.every_second.tasks import tick
from tests.support.helpers import try_claim, try_claim_batch
from tests.support.hook_examples import current_tenant
from tests.support.models import Receipt
from tests.support.tasks.basic import add
from tests.support.tasks.workflows import fetch, length

pytestmark = pytest.mark.django_db(transaction=True)

TENANT_HOOKS = [
    "tests.support.hook_examples.TenantHook",
    "tests.support.hook_examples.RefusingHook",
]


@pytest.fixture
def hooked(settings):
    """The default backend with the tenant hook, then one refusing jobs whose meta asks."""
    default = settings.TASKS["default"]
    settings.TASKS = {
        "default": {**default, "OPTIONS": {**default["OPTIONS"], "hooks": TENANT_HOOKS}}
    }
    return task_backends["default"]


@pytest.fixture
def tenant():
    token = current_tenant.set("acme")
    yield "acme"
    current_tenant.reset(token)


def _meta(result) -> dict:
    return Job.objects.get(pk=result.id).meta


def test_using_meta_is_stored_and_claimed_on_every_claim_path(backend):
    one = add.using(meta={"request_id": "r-1", "nested": [1, {"a": None}]}).enqueue(1, 2)
    assert _meta(one) == {"request_id": "r-1", "nested": [1, {"a": None}]}
    assert _meta(add.enqueue(1, 2)) == {}  # the column's default
    [claimed] = try_claim([one.id])
    assert claimed.meta == {"request_id": "r-1", "nested": [1, {"a": None}]}
    add.using(meta={"polled": True}).enqueue(3, 4)
    # The order a batch's rows come back in is the join's, not the claim's.
    assert sorted(job.meta.get("polled", False) for job in try_claim_batch()) == [False, True]


def test_meta_travels_through_a_batch_and_through_copy(backend):
    small = backend.enqueue_many([(add.using(meta={"i": i}), (i, i), {}) for i in range(3)])
    large = backend.enqueue_many([(add.using(meta={"i": i}), (i, i), {}) for i in range(100)])
    for results in (small, large):
        assert [_meta(result)["i"] for result in results] == list(range(len(results)))


def test_unstorable_meta_is_refused_naming_meta(backend):
    refused = r"tests\.support\.tasks\.basic\.add: its meta cannot be stored"
    with pytest.raises(InvalidTaskArguments, match=refused):
        add.using(meta={"bad": "\x00"}).enqueue(1, 2)
    with pytest.raises(InvalidTaskArguments, match=r"meta cannot be stored.*not JSON"):
        add.using(meta={"when": object()}).enqueue(1, 2)
    with pytest.raises(TypeError, match="takes a dict"):
        add.using(meta=["not", "a", "dict"])
    assert Job.objects.count() == 0


def test_before_enqueue_adds_to_meta_on_every_path(hooked, tenant):
    assert _meta(add.using(meta={"mine": 1}).enqueue(1, 2)) == {
        "mine": 1,
        "tenant": "acme",
        "seen": True,
    }
    for result in hooked.enqueue_many([(add, (i, i), {}) for i in range(70)]):  # COPY
        assert _meta(result) == {"tenant": "acme", "seen": True}
    handle = chain(step(fetch, "u"), step(length)).enqueue()
    steps = Job.objects.filter(workflow_id=handle.id)
    assert [job.meta for job in steps] == [{"tenant": "acme", "seen": True}] * 2
    declaration = declaration_of(tick)
    now = execute(database_now())
    first_tick = next(iter(declaration.timing.ticks_after(now)))
    execute(sync_schedules("default", [declaration], [first_tick], now))
    job_id = run_now(hooked.enqueuer, declaration)
    assert Job.objects.get(pk=job_id).meta == {"tenant": "acme", "seen": True}


def test_a_hook_raising_stops_the_enqueue_and_nothing_is_written(hooked):
    with pytest.raises(PermissionError, match=r"refused tests\.support\.tasks\.basic\.add"):
        add.using(meta={"refuse": True}).enqueue(1, 2)
    calls = [(add, (1, 1), {}), (add.using(meta={"refuse": True}), (2, 2), {})]
    with pytest.raises(PermissionError):
        hooked.enqueue_many(calls)
    with pytest.raises(PermissionError):
        chain(step(fetch, "u"), step(length.using(meta={"refuse": True}))).enqueue()
    assert Job.objects.count() == 0


def test_before_enqueue_runs_inside_the_enqueues_transaction(hooked):
    """The refusing hook writes a receipt, then raises: the enqueue's transaction (even with no
    transaction of the caller's) takes the receipt back with the job."""
    with pytest.raises(PermissionError):
        add.using(meta={"refuse": True}).enqueue(1, 2)
    assert Receipt.objects.count() == 0
    with transaction.atomic():  # in the caller's transaction, the hook's write commits with it
        add.enqueue(1, 2)
        Receipt.objects.create(job_id=Job.objects.get().id, written_by="view")
    assert Receipt.objects.count() == 1
