"""The wall time of each phase of ``dev.py test``, printed at the end whatever the outcome: the
README's command has a time budget (10 minutes on a fresh 2-core machine), and this shows where
it goes."""

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass
class Phase:
    name: str
    seconds: float = 0.0
    ok: bool = True


class Phases:
    def __init__(self) -> None:
        self.started = time.monotonic()
        self.done: list[Phase] = []

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[Phase]:
        """Time the ``with`` block as phase ``name``; set ``ok`` on what it yields to False when
        the phase failed (raising does too)."""
        print(f"=== {name} ===\n", end="", flush=True)  # one write: phases may run at once
        record = Phase(name)
        self.done.append(record)
        started = time.monotonic()
        try:
            yield record
        except BaseException:
            record.ok = False
            raise
        finally:
            record.seconds = time.monotonic() - started

    def report(self) -> str:
        width = max([len(phase.name) for phase in self.done] + [len("total")])
        lines = [
            f"  {phase.name:<{width}}  {_clock(phase.seconds)}{'' if phase.ok else '  FAILED'}"
            for phase in self.done
        ]
        total = f"  {'total':<{width}}  {_clock(time.monotonic() - self.started)}"
        return "\n".join(["Phase times (wall clock, m:ss):", *lines, total])


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(round(seconds), 60)
    return f"{minutes:2d}:{seconds:02d}"
