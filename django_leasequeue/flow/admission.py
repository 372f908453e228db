"""Which candidates a flow claim may start, given what their limits use now.

A pure function of what the claim read under its locks: no clock but the database's, no I/O.
Rate limits are GCRA (the generic cell rate algorithm): a bucket stores the theoretical arrival
time (TAT) of its next start; a start is allowed when ``TAT - tolerance <= now``, and pushes the
TAT one interval past ``max(TAT, now)``.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import chain, zip_longest
from uuid import UUID

from django_leasequeue.flow.limits import Rate
from django_leasequeue.sql.records import FlowCandidate, FlowUsage


@dataclass(slots=True)
class Admission:
    """The jobs a claim may start, the rate buckets' new TATs, and when a job held back by a
    rate limit may start (None when none is)."""

    ids: list[UUID] = field(default_factory=list)
    tats: dict[str, datetime] = field(default_factory=dict)
    next_start: datetime | None = None
    # The flow partition of the last job admitted (where the next round-robin round goes on).
    last_partition: str | None = None


def round_robin(candidates: Sequence[FlowCandidate]) -> list[FlowCandidate]:
    """Candidates arrive grouped by partition, each in claim order: take one of each in turn."""
    groups: dict[str, list[FlowCandidate]] = {}
    for candidate in candidates:
        groups.setdefault(candidate.flow_key, []).append(candidate)
    turns = zip_longest(*groups.values())
    return [candidate for candidate in chain.from_iterable(turns) if candidate is not None]


def limit_keys(limits: Iterable[dict]) -> tuple[set[str], set[str], set[str]]:
    """The concurrency keys, capped queues and rate keys of these limits (``flow_usage``'s
    arguments)."""
    concurrency, queues, rates = set(), set(), set()
    for limit in limits:
        if "rate" in limit:
            rates.add(limit["key"])
        elif "queue" in limit:
            queues.add(limit["queue"])
        else:
            concurrency.add(limit["key"])
    return concurrency, queues, rates


@dataclass(frozen=True, slots=True)
class Hold:
    """What keeps a job from starting: a full concurrency cap (``running`` of ``cap``, of a
    queue when ``queue`` is set), or a rate limit (``until`` when it may start)."""

    running: int = 0
    cap: int = 0
    queue: str | None = None
    until: datetime | None = None


def hold(
    limits: Iterable[dict],
    running: Mapping[str, int],
    queue_running: Mapping[str, int],
    tats: Mapping[str, datetime | None],
    now: datetime,
) -> Hold | None:
    """The first full concurrency cap of these limits, else the rate limit that lets the job
    start last; None when every limit has room now."""
    latest = None
    for limit in limits:
        if "rate" in limit:
            tat = tats.get(limit["key"])
            if tat is not None:
                allowed_at = tat - _rate(limit).tolerance_delta
                if allowed_at > now and (latest is None or allowed_at > latest):
                    latest = allowed_at
        elif "queue" in limit:
            used = queue_running.get(limit["queue"], 0)
            if used >= limit["concurrency"]:
                return Hold(used, limit["concurrency"], queue=limit["queue"])
        else:
            used = running.get(limit["key"], 0)
            if used >= limit["concurrency"]:
                return Hold(used, limit["concurrency"])
    return None if latest is None else Hold(until=latest)


def admit(
    candidates: Sequence[FlowCandidate],
    locked_keys: frozenset[str],
    usage: FlowUsage,
    free: int,
) -> Admission:
    """Admit up to ``free`` candidates, round-robin over partitions, whose every limit has room;
    a candidate whose limits this claim could not lock belongs to another claimer for now."""
    admission = Admission()
    now = usage.now
    if now is None:
        return admission
    running = dict(usage.running)
    queue_running = dict(usage.queue_running)
    tats = dict(usage.tats)
    for candidate in round_robin(candidates):
        if len(admission.ids) >= free:
            break
        if any(limit["key"] not in locked_keys for limit in candidate.limits):
            continue
        held = hold(candidate.limits, running, queue_running, tats, now)
        if held is not None:
            if held.until is not None and (
                admission.next_start is None or held.until < admission.next_start
            ):
                admission.next_start = held.until
            continue
        for limit in candidate.limits:
            key = limit["key"]
            if "rate" in limit:
                tat = tats.get(key) or now
                tats[key] = admission.tats[key] = max(tat, now) + _rate(limit).interval_delta
            elif "queue" in limit:
                queue_running[limit["queue"]] = queue_running.get(limit["queue"], 0) + 1
            else:
                running[key] = running.get(key, 0) + 1
        admission.ids.append(candidate.id)
        admission.last_partition = candidate.flow_key
    return admission


class _Deltas:
    """A rate's interval and tolerance as timedeltas (cached per (count, period))."""

    __slots__ = ("interval_delta", "tolerance_delta")

    def __init__(self, rate: Rate) -> None:
        self.interval_delta = timedelta(seconds=rate.interval)
        self.tolerance_delta = timedelta(seconds=rate.tolerance)


_DELTAS: dict[tuple[int, float], _Deltas] = {}


def _rate(limit: dict) -> _Deltas:
    key = (limit["rate"], limit["per"])
    deltas = _DELTAS.get(key)
    if deltas is None:
        deltas = _DELTAS[key] = _Deltas(Rate(*key))
    return deltas
