import pytest

from django_leasequeue.models import Job
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.executor import execute
from tests.support.helpers import wakeups_delivered
from tests.support.tasks.basic import add

pytestmark = pytest.mark.django_db(transaction=True)


def test_enqueue_claim_complete(backend, redis_client):
    result = add.enqueue(1, 2)
    assert Job.objects.get(pk=result.id).status == "queued"
    wakeups_delivered(backend.wakeups)
    assert redis_client.lrange(f"{backend.config.key_prefix}:wakeups:default", 0, -1) == [
        result.id.encode()
    ]
    [claimed] = execute(jobs_sql.claim_by_ids([result.id], worker_id="w1", lease_seconds=30))
    assert claimed.args == [1, 2]
    assert execute(jobs_sql.complete(claimed.lease, 3))
    result.refresh()
    assert result.return_value == 3
