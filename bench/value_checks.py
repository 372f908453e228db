"""What the one rule for stored values costs per value, beside a plain ``json.dumps``.

    python bench/value_checks.py [--number 20000]

For typical return values and checkpoints (a number, a small dict, a list of ids, a 10 kB text
with emoji), prints µs per ``jsonargs.encode`` (the C encoder, then the scans and checks that
make the value storable) and per ``json.dumps(value, separators=(",", ":"))`` of the same value
in the same run, and their difference: what each job pays for the checks.
"""

import argparse
import json
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from django_leasequeue.jsonargs import encode

VALUES = {
    "None": None,
    "an int": 42,
    "a small dict": {"user_id": 123, "status": "sent", "retries": 0, "ok": True},
    "100 ids": list(range(100_000, 100_100)),
    "nested (3 levels)": {"items": [{"id": i, "tags": ["a", "b"]} for i in range(10)]},
    "10 kB text, emoji": "héllo wörld 😀 " * 650,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--number", type=int, default=20000)
    number = parser.parse_args().number
    print(f"{'value':<20} {'encode µs':>10} {'json.dumps µs':>14} {'checks µs':>10}")
    for name, value in VALUES.items():
        ours = _best(lambda value=value: encode(value, "return value"), number)
        plain = _best(lambda value=value: json.dumps(value, separators=(",", ":")), number)
        print(f"{name:<20} {ours:>10.2f} {plain:>14.2f} {ours - plain:>10.2f}")


def _best(call, number: int) -> float:
    """µs per call: the best of 5 runs (the least disturbed by the rest of the machine)."""
    return min(timeit.repeat(call, number=number, repeat=5)) / number * 1e6


if __name__ == "__main__":
    main()
