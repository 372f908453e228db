"""Which ticks of a due schedule get a job: on-time ticks all do, missed ones up to ``catch_up``.

A tick is *on time* while it is at most ``ON_TIME`` old when a scheduler sees it: a worker that
was busy for a moment, or restarted by its supervisor, still runs every tick. Older ticks were
*missed* (every worker was down, or the schedule was just created far from a tick): only the
latest ``catch_up`` of them run, the others are counted as missed. After an hour without
workers an every-minute schedule with ``catch_up=1`` runs once, not sixty times.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import islice

from django_leasequeue.schedules.timing import IntervalTiming, Timing

ON_TIME = timedelta(seconds=10)
# Missed cron ticks are counted one by one up to this many (then reported as this many).
MISSED_COUNT_LIMIT = 10_000


@dataclass(frozen=True, slots=True)
class Plan:
    fire: list[datetime]  # ticks that get a job, ascending
    missed: int  # ticks passed over
    covered_until: datetime  # every tick up to here is handled once this plan is carried out
    next_run_at: datetime  # the first tick after now


def plan_ticks(timing: Timing, covered_until: datetime, now: datetime, catch_up: int) -> Plan:
    """The plan for the ticks in ``(covered_until, now]``."""
    next_run_at = next(iter(timing.ticks_after(now)))
    pending = timing.ticks_before(next_run_at)  # descending from the latest tick <= now
    fire: list[datetime] = []
    late: list[datetime] = []
    latest = covered_until
    for tick in pending:
        if tick <= covered_until:
            break
        latest = max(latest, tick)
        if now - tick <= ON_TIME:
            fire.append(tick)
            continue
        late.append(tick)
        if len(late) >= catch_up:
            break
    missed = _count_missed(timing, covered_until, late[-1] if late else None, len(late), catch_up)
    fire.extend(late[:catch_up])
    return Plan(sorted(fire), missed, latest, next_run_at)


def _count_missed(
    timing: Timing, covered_until: datetime, oldest_seen: datetime | None, seen: int, keep: int
) -> int:
    """Late ticks beyond the ``keep`` latest: those seen but not kept, and those before them."""
    if oldest_seen is None:
        return 0
    dropped = seen - min(seen, keep)
    if isinstance(timing, IntervalTiming):
        # ticks strictly between the two: ceil((oldest_seen - covered_until) / interval) - 1
        return dropped + max(0, -((covered_until - oldest_seen) // timing.interval) - 1)
    older = timing.ticks_before(oldest_seen)
    return dropped + sum(1 for tick in islice(older, MISSED_COUNT_LIMIT) if tick > covered_until)
