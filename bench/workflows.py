"""Workflows at scale, each figure beside plain jobs measured in the same run (issue #22).

    python bench/workflows.py [--members 10000] [--processes 2] [--concurrency 10]

Prints:
- enqueue: a chord of ``--members`` steps plus its callback in one ``enqueue()``, against
  ``enqueue_many`` of as many plain jobs (target: at least 50%);
- drain: that chord drained by ``runworkers``, against as many plain jobs (target: 80%), the
  median ratio of ``--repeats`` pairs run back to back;
- fan-in cost per finished parent: the database time of the fenced completions (settling
  dependency rows and releasing callbacks included) of ``--members`` parents, as one group
  against groups of 10 (flat: a ratio of at most 1, no scan of the siblings per completion;
  groups of 10 also release a callback per 10 parents), beside as many plain jobs; medians of
  ``--repeats`` runs taken in turns;
- a chain of 100 steps: the pickup of each next step (its start less its parent's finish),
  p50/p99, against the pickup of plain jobs enqueued one at a time to idle workers.
Uses its own database (lq_bench, bench/settings.py).
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

from bench import harness  # noqa: E402


def _chord(members: int):
    from bench.tasks import gather, noop
    from django_leasequeue import chord, group, step

    return chord(group(*(step(noop, n) for n in range(members))), step(gather))


def _groups_of_ten(parents: int):
    from bench.tasks import gather, noop
    from django_leasequeue import chord, group, step

    return [
        chord(group(*(step(noop, n) for n in range(10))), step(gather))
        for _ in range(parents // 10)
    ]


def _timed(call) -> float:
    from django.db import transaction

    started = time.perf_counter()
    with transaction.atomic():
        call()
    return time.perf_counter() - started


def measure_enqueue(members: int, repeats: int) -> tuple[float, float]:
    """Median steps/s of one chord's enqueue, and of enqueue_many of as many plain jobs."""
    from bench.tasks import noop

    backend = noop.get_backend()
    chord_rates, plain_rates = [], []
    for _ in range(repeats):
        harness.reset()
        workflow = _chord(members)
        chord_rates.append((members + 1) / _timed(workflow.enqueue))
        harness.reset()
        calls = [(noop, (n,), {}) for n in range(members + 1)]
        plain_rates.append((members + 1) / _timed(lambda calls=calls: backend.enqueue_many(calls)))
    return statistics.median(chord_rates), statistics.median(plain_rates)


def drain(enqueue, jobs: int, processes: int, concurrency: int) -> float:
    """Jobs/s from the first claim to the last finish (database clock) of what ``enqueue``
    wrote, drained by a burst of ``runworkers``."""
    from django.db.models import Max, Min

    from django_leasequeue.models import Job

    harness.reset()
    _timed(enqueue)
    harness.checkpoint()  # neither drain of a pair pays for a checkpoint the other started
    process = harness.start_workers(processes, concurrency, "--burst", "--queues", "*")
    harness.wait_all_finished(jobs)
    process.wait(60)
    span = Job.objects.aggregate(first=Min("last_attempted_at"), last=Max("finished_at"))
    return jobs / (span["last"] - span["first"]).total_seconds()


def completion_cost(enqueue) -> float:
    """Microseconds per job of the completion statements (20 at a time, as a worker batches
    them: ``complete_steps`` for workflow steps, ``complete_many`` for plain jobs) once
    ``enqueue`` has written its jobs: claimed and completed in this process, so that nothing
    but the database's work is timed."""
    from django_leasequeue.sql import jobs as jobs_sql
    from django_leasequeue.sql.executor import execute

    harness.reset()
    _timed(enqueue)
    timed, jobs = 0.0, 0
    while claimed := execute(jobs_sql.claim_batch(None, 20, worker_id="bench", lease_seconds=60)):
        started = time.perf_counter()
        outcomes = [(job.lease, "null") for job in claimed]
        steps = claimed[0].workflow_id is not None  # no run mixes steps and plain jobs
        execute(jobs_sql.complete_steps(outcomes) if steps else jobs_sql.complete_many(outcomes))
        timed += time.perf_counter() - started
        jobs += len(claimed)
    return timed / jobs * 1e6


def measure_chain_pickup(length: int, processes: int, concurrency: int) -> list[float]:
    """Milliseconds from each step's parent finishing to the step starting."""
    from bench.tasks import noop
    from django_leasequeue import chain, step
    from django_leasequeue.models import Job, StepDependency

    harness.reset()
    process = harness.start_workers(processes, concurrency, "--queues", "*")
    time.sleep(2)  # workers up and idle, as for plain jobs' pickup
    chain(step(noop, 0), *(step(noop) for _ in range(length - 1))).enqueue()
    harness.wait_all_finished(length)
    harness.stop_workers(process)
    finished = dict(Job.objects.values_list("id", "finished_at"))
    started = dict(Job.objects.values_list("id", "last_attempted_at"))
    return [
        (started[child] - finished[parent]).total_seconds() * 1000
        for parent, child in StepDependency.objects.values_list("parent_id", "child_id")
    ]


def measure_plain_pickup(samples: int, processes: int, concurrency: int) -> list[float]:
    """Milliseconds from a plain job's enqueue (committed alone) to its start, idle workers."""
    from bench.tasks import noop
    from django_leasequeue.models import Job

    harness.reset()
    process = harness.start_workers(processes, concurrency, "--queues", "*")
    time.sleep(2)
    for n in range(samples):
        noop.enqueue(n)
        time.sleep(0.02)
    harness.wait_all_finished(samples)
    harness.stop_workers(process)
    return [
        (started - enqueued).total_seconds() * 1000
        for enqueued, started in Job.objects.values_list("enqueued_at", "last_attempted_at")
    ]


def _percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p50 = ordered[len(ordered) // 2]
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {p50:6.1f} ms  p99 {p99:6.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--members", type=int, default=10_000)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    harness.setup_database()
    from bench.tasks import noop

    members, workers = args.members, (args.processes, args.concurrency)
    chord_rate, plain_rate = measure_enqueue(members, args.repeats)
    print(f"enqueue: chord of {members:,} + callback {chord_rate:9,.0f} steps/s")
    print(f"         enqueue_many, same count   {plain_rate:9,.0f} jobs/s")
    print(f"         ratio {chord_rate / plain_rate:.2f} (target >= 0.50)")

    backend = noop.get_backend()
    calls = [(noop, (n,), {}) for n in range(members + 1)]
    ratios, chord_drains, plain_drains = [], [], []
    for _ in range(args.repeats):  # in turns; each ratio from a pair run back to back
        chord_drains.append(drain(_chord(members).enqueue, members + 1, *workers))
        plain_drains.append(drain(lambda: backend.enqueue_many(calls), members + 1, *workers))
        ratios.append(chord_drains[-1] / plain_drains[-1])
    chord_drain, plain_drain = statistics.median(chord_drains), statistics.median(plain_drains)
    print(f"drain:   chord {chord_drain:9,.0f} steps/s, plain jobs {plain_drain:9,.0f} jobs/s")
    shown = ", ".join(f"{ratio:.2f}" for ratio in ratios)
    print(f"         ratio {statistics.median(ratios):.2f} (runs: {shown}; target >= 0.80)")

    small = _groups_of_ten(members)
    costs: dict[str, list[float]] = {"one group": [], "groups of 10": [], "plain": []}
    for _ in range(args.repeats):  # in turns, so that the machine's noise falls on each
        costs["one group"].append(completion_cost(_chord(members).enqueue))
        costs["groups of 10"].append(
            completion_cost(lambda: [workflow.enqueue() for workflow in small])
        )
        costs["plain"].append(completion_cost(lambda: backend.enqueue_many(calls)))
    one_group, groups_of_ten, plain = (statistics.median(runs) for runs in costs.values())
    print(f"fan-in:  completion per step, one group of {members:,}: {one_group:5.0f} µs")
    print(f"         groups of 10, same number of parents:           {groups_of_ten:5.0f} µs")
    print(f"         plain jobs, no fan-in:                          {plain:5.0f} µs")
    print(f"         ratio {one_group / groups_of_ten:.2f} (flat: at most 1)")

    chain_pickups = measure_chain_pickup(100, *workers)
    plain_pickups = measure_plain_pickup(100, *workers)
    print(f"chain of 100, pickup of each next step: {_percentiles(chain_pickups)}")
    print(f"plain jobs enqueued one at a time:      {_percentiles(plain_pickups)}")


if __name__ == "__main__":
    main()
