"""``--concurrency`` caps the jobs that run at once in a process, and a backlog fills every
slot: measured by the jobs' own clocks."""

import pytest

from django_leasequeue.models import Job
from tests.acceptance.harness import wait_until
from tests.support.tasks.basic import atimes_its_sleep, times_its_sleep

pytestmark = pytest.mark.django_db(transaction=True)


def _most_at_once(spans: list[list[float]]) -> int:
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    running = most = 0
    for _, step in edges:  # an end sorts before a start at the same instant
        running += step
        most = max(most, running)
    return most


@pytest.mark.parametrize("sleeper", [atimes_its_sleep, times_its_sleep], ids=["async", "sync"])
def test_a_process_runs_at_most_concurrency_jobs_at_once_and_fills_its_slots(
    start_workers, sleeper
):
    ids = [sleeper.enqueue(0.15).id for _ in range(15)]
    workers = start_workers("--processes", "1", "--concurrency", "3")
    wait_until(
        lambda: Job.objects.filter(pk__in=ids, status="succeeded").count() == len(ids),
        60,
        "every job to succeed",
    )
    spans = [sleeper.get_result(str(i)).return_value for i in ids]
    assert _most_at_once(spans) == 3, (spans, workers.log())
