"""Start-up of ``runworkers``: wall time and CPU of a ``--burst`` over an empty queue, the part of
every drain that does not grow with its jobs (imports, Django set up, the worker processes
started, connected and stopped).

Each ``--compare`` checkout (``git worktree add /tmp/before <commit>``, say) runs in turn with
this one, run after run, so that a noisy minute hits them alike; each prints its medians.

    .venv/bin/python bench/startup.py --runs 7 --compare /tmp/before
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--compare", type=Path, action="append", default=[], metavar="CHECKOUT")
    return parser.parse_args()


def empty_burst(checkout: Path, processes: int) -> tuple[float, float]:
    """Wall seconds and CPU seconds (supervisor and workers) of one empty burst."""
    env = {
        **os.environ,
        "PYTHONPATH": str(checkout),
        "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "bench.settings"),
    }
    command = [sys.executable, "-m", "django", "runworkers", "-v", "0", "--burst"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([*command, "--processes", str(processes)], cwd=checkout, env=env, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


def main() -> None:
    args = parse_args()
    checkouts = [ROOT, *(path.resolve() for path in args.compare)]
    runs: dict[Path, list[tuple[float, float]]] = {checkout: [] for checkout in checkouts}
    for _ in range(args.runs):
        for checkout in checkouts:
            runs[checkout].append(empty_burst(checkout, args.processes))
    print(f"empty --burst of {args.processes} process(es), medians of {args.runs} runs:")
    for checkout, results in runs.items():
        wall = statistics.median(wall for wall, _ in results)
        cpu = statistics.median(cpu for _, cpu in results)
        print(f"  {checkout}: wall {wall:.3f} s, CPU {cpu:.3f} s")


if __name__ == "__main__":
    main()
