"""What limits a job is held to: the task's and its queue's, parsed and keyed.

A job held to any limit carries them in its row (``limits``), so a claim never needs to import
the task to enforce them. Keys are namespaced (``task:<path>`` or ``task:<path>:<key>``, and
``queue:<name>``) so that two tasks' keys never share a cap by accident.
"""

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

from django_leasequeue.exceptions import LimitError
from django_leasequeue.jsonargs import text_problem
from django_leasequeue.sql.records import LimitColumns

# A limit key is stored in a varchar(255) column, and may not hold NUL.
KEY_MAX_LENGTH = 255

_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*(s|sec|second|m|min|minute|h|hour)s?\s*$")
_PERIOD_SECONDS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60}
_PERIOD_SECONDS |= {"h": 3600, "hour": 3600}


@dataclass(frozen=True, slots=True)
class Rate:
    """At most ``count`` starts per ``period`` seconds, written as "10/s", "30/m" or "100/h"."""

    count: int
    period: float

    @classmethod
    def parse(cls, text: object) -> Self:
        match = _RATE.match(text) if isinstance(text, str) else None
        if match is None or int(match[1]) < 1 or match[2] == "0":
            raise LimitError(
                f"rate_limit {text!r} is not a rate: write starts per period, e.g. '10/s', "
                "'30/m' or '100/h' (at least 1 start)."
            )
        return cls(int(match[1]), int(match[2] or 1) * _PERIOD_SECONDS[match[3]])

    @property
    def interval(self) -> float:
        """Seconds between two starts at the steady rate (GCRA's emission interval)."""
        return self.period / self.count

    @property
    def tolerance(self) -> float:
        """How early a start may come before its steady-rate time: half an interval. It absorbs
        a claimer waking a little late without losing rate, and bounds any window of one
        period to ``count + 1`` starts."""
        return self.interval / 2

    def __str__(self) -> str:
        return f"{self.count}/{_period_name(self.period)}"


def _period_name(period: float) -> str:
    for unit, seconds in (("h", 3600), ("m", 60)):
        if period % seconds == 0:
            return unit if period == seconds else f"{int(period // seconds)}{unit}"
    return "s" if period == 1 else f"{int(period)}s"


def positive_int(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise LimitError(f"{name} must be a whole number ≥ 1, not {value!r}.")
    return value


@dataclass(frozen=True, slots=True)
class QueueLimit:
    """``OPTIONS["queue_limits"][queue]``: what every job of one queue is held to."""

    queue: str
    concurrency: int | None = None
    rate_limit: Rate | None = None
    max_pending: int | None = None

    @property
    def key(self) -> str:
        return f"queue:{self.queue}"


_QUEUE_LIMIT_NAMES = ("concurrency", "rate_limit", "max_pending")


def parse_queue_limits(value: object, declared_queues: set[str]) -> dict[str, QueueLimit]:
    """Parse ``OPTIONS["queue_limits"]``; raises LimitError naming the queue and the value."""
    if not isinstance(value, Mapping):
        raise LimitError(
            f"queue_limits must map queue names to limits, e.g. "
            f'{{"llm": {{"concurrency": 2}}}}, not {value!r}.'
        )
    limits = {}
    for queue, spec in value.items():
        if declared_queues and queue not in declared_queues:
            raise LimitError(
                f"queue_limits names queue {queue!r}, which is not in QUEUES "
                f"{sorted(declared_queues)}."
            )
        if not isinstance(spec, Mapping) or not spec:
            raise LimitError(
                f"queue_limits[{queue!r}] must be a dict with any of {list(_QUEUE_LIMIT_NAMES)}, "
                f"not {spec!r}."
            )
        unknown = sorted(set(spec) - set(_QUEUE_LIMIT_NAMES))
        if unknown:
            raise LimitError(
                f"queue_limits[{queue!r}] has unknown keys {unknown}; valid keys are "
                f"{list(_QUEUE_LIMIT_NAMES)}."
            )
        try:
            limits[queue] = QueueLimit(
                queue,
                concurrency=_optional(positive_int, "concurrency", spec.get("concurrency")),
                rate_limit=None
                if spec.get("rate_limit") is None
                else Rate.parse(spec["rate_limit"]),
                max_pending=_optional(positive_int, "max_pending", spec.get("max_pending")),
            )
        except LimitError as exc:
            raise LimitError(f"queue_limits[{queue!r}]: {exc}") from None
    return limits


def _optional(parse: Callable[[str, object], int], name: str, value: object) -> int | None:
    return None if value is None else parse(name, value)


@dataclass(frozen=True, slots=True)
class JobLimits:
    """The limits one job is held to, as its row stores them.

    ``flow_key`` is the job's claim partition: claims go round-robin over partitions, so one busy
    key cannot starve the others. ``concurrency_key`` is the task's concurrency key (indexed over
    running jobs); ``limits`` lists every limit with its key, for the claim to enforce.
    """

    flow_key: str | None
    concurrency_key: str | None
    pending_key: str | None
    limits: list[dict[str, Any]]


def task_key(
    task_path: str,
    key_function: Callable[..., Any] | None,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    option: str,
) -> str:
    """``task:<path>``, or ``task:<path>:<key>`` with the key the task's callable returns."""
    if key_function is None:
        return f"task:{task_path}"
    key = key_function(*args, **kwargs)
    if not isinstance(key, str | int) or isinstance(key, bool):
        raise LimitError(f"{option} of {task_path} must return a string, not {key!r}.")
    full = f"task:{task_path}:{key}"
    if len(full) > KEY_MAX_LENGTH:
        raise LimitError(
            f"{option} of {task_path} returned {str(key)[:40]!r}, which makes a key longer than "
            f"{KEY_MAX_LENGTH} characters."
        )
    if (problem := text_problem(full)) is not None:
        raise LimitError(f"{option} of {task_path} returned {str(key)[:40]!r}: {problem}.")
    return full


@dataclass(frozen=True, slots=True)
class TaskLimits:
    """The flow-control options of one task (``@task(concurrency=..., rate_limit=..., ...)``),
    checked; each ``*_key`` is a callable given the job's arguments, or None for one shared key."""

    concurrency: int | None = None
    concurrency_key: Callable[..., Any] | None = None
    rate_limit: Rate | None = None
    rate_limit_key: Callable[..., Any] | None = None
    max_pending: int | None = None
    max_pending_key: Callable[..., Any] | None = None

    @classmethod
    def of(cls, task: Any) -> Self:
        """Read and check a task's options; raises LimitError naming the bad one."""
        concurrency = _optional(positive_int, "concurrency", getattr(task, "concurrency", None))
        max_pending = _optional(positive_int, "max_pending", getattr(task, "max_pending", None))
        rate_text = getattr(task, "rate_limit", None)
        rate = None if rate_text is None else Rate.parse(rate_text)
        keys = {}
        for name, limit in (
            ("concurrency_key", concurrency),
            ("rate_limit_key", rate),
            ("max_pending_key", max_pending),
        ):
            key = getattr(task, name, None)
            if key is not None and not callable(key):
                raise LimitError(f"{name} must be a callable given the job's arguments.")
            if key is not None and limit is None:
                base = name.removesuffix("_key")
                raise LimitError(f"{name} is given without {base}: say what the cap per key is.")
            keys[name] = key
        return cls(concurrency=concurrency, rate_limit=rate, max_pending=max_pending, **keys)

    @property
    def limited(self) -> bool:
        return self.concurrency is not None or self.rate_limit is not None

    def job_limits(
        self,
        task_path: str,
        queue: QueueLimit | None,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
    ) -> JobLimits | None:
        """The limits a job of this task with these arguments is held to; None when none."""
        limits: list[dict[str, Any]] = []
        concurrency_key = pending_key = None
        if self.concurrency is not None:
            concurrency_key = task_key(
                task_path, self.concurrency_key, args, kwargs, "concurrency_key"
            )
            limits.append({"key": concurrency_key, "concurrency": self.concurrency})
        rate_key = None
        if self.rate_limit is not None:
            rate_key = task_key(task_path, self.rate_limit_key, args, kwargs, "rate_limit_key")
            limits.append({"key": rate_key, **_rate_fields(self.rate_limit)})
        if self.max_pending is not None:
            pending_key = task_key(task_path, self.max_pending_key, args, kwargs, "max_pending_key")
        if queue is not None and queue.concurrency is not None:
            limits.append(
                {"key": queue.key, "queue": queue.queue, "concurrency": queue.concurrency}
            )
        if queue is not None and queue.rate_limit is not None:
            limits.append({"key": queue.key, **_rate_fields(queue.rate_limit)})
        if not limits and pending_key is None:
            return None
        # Limits without a task key are the queue's.
        flow_key = concurrency_key or rate_key or (queue.key if limits else None)  # type: ignore[union-attr]
        return JobLimits(flow_key, concurrency_key, pending_key, limits)


def _rate_fields(rate: Rate) -> dict[str, Any]:
    return {"rate": rate.count, "per": rate.period}


def limit_columns(limits: JobLimits | None) -> LimitColumns | None:
    """The job row's flow-control columns for these limits (None without): what the statements
    writing a job take (``NewJob.limits``, ``JobFields.limits``)."""
    if limits is None:
        return None
    return LimitColumns(
        json.dumps(limits.limits) if limits.limits else None,
        limits.flow_key,
        limits.concurrency_key,
        limits.pending_key,
    )
