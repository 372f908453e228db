"""``manage.py prunejobs`` deletes old finished jobs only, in batches."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from django_leasequeue.models import Job
from tests.tasks import add

pytestmark = pytest.mark.django_db(transaction=True)


def _job(status: str, finished_days_ago: float | None) -> str:
    job_id = add.enqueue(1, 2).id
    finished_at = (
        None if finished_days_ago is None else timezone.now() - timedelta(days=finished_days_ago)
    )
    Job.objects.filter(pk=job_id).update(status=status, finished_at=finished_at)
    return job_id


def test_only_old_finished_jobs_are_deleted(backend):
    old = [_job(status, 30) for status in ("succeeded", "failed", "cancelled") for _ in range(3)]
    recent = _job("succeeded", 1)
    unfinished = [_job("queued", None), _job("running", None), _job("retrying", None)]
    out = StringIO()
    call_command("prunejobs", "--days", "7", "--batch", "2", stdout=out)
    assert "Deleted 9 finished job(s)" in out.getvalue()
    remaining = {str(pk) for pk in Job.objects.values_list("pk", flat=True)}
    assert remaining == {recent, *unfinished}
    assert not remaining & set(old)


def test_status_filter_keeps_the_others(backend):
    failed, succeeded = _job("failed", 30), _job("succeeded", 30)
    call_command("prunejobs", "--days", "7", "--status", "succeeded", stdout=StringIO())
    assert {str(pk) for pk in Job.objects.values_list("pk", flat=True)} == {failed}
    assert succeeded not in {str(pk) for pk in Job.objects.values_list("pk", flat=True)}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--days", "-1"], "is not a number of at least 0"),
        (["--days", "7", "--batch", "0"], "is not a whole number of at least 1"),
        (["--days", "7", "--status", "queued"], "invalid choice: 'queued'"),
    ],
)
def test_bad_arguments_are_refused(args, message):
    with pytest.raises(CommandError, match=message):
        call_command("prunejobs", *args)
