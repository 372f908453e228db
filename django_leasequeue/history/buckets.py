"""Latency histograms: the buckets the history stores latencies in, and percentiles read back.

Four buckets per doubling from 0.1 ms: a percentile read from a bucket (its geometric middle) is
within 9 % of the latency it stands for, and a minute's histogram holds a dozen-odd buckets.
"""

import math
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from itertools import accumulate

from django_leasequeue.sql.history import LatencyBuckets

# 0.1 ms * 2 ** (144 / 4): 79 days, above any job's pickup or run time.
BUCKETS = LatencyBuckets(base_ms=0.1, steps=4, last=144)


def bucket_ms(bucket: int, buckets: LatencyBuckets = BUCKETS) -> float:
    """The latency a bucket stands for: its bounds' geometric middle (half the base for
    bucket 0, the lower bound for the last, which has no upper one)."""
    if bucket <= 0:
        return buckets.base_ms / 2
    if bucket >= buckets.last:
        return buckets.base_ms * 2 ** ((buckets.last - 1) / buckets.steps)
    return buckets.base_ms * 2 ** ((bucket - 0.5) / buckets.steps)


def percentiles(
    histogram: Mapping[int, int], fractions: Sequence[float], buckets: LatencyBuckets = BUCKETS
) -> list[float | None]:
    """For each fraction, the latency (ms) below which that fraction of the
    histogram's samples fall (nearest rank), rounded to three significant figures; None for an
    empty histogram."""
    buckets_held = sorted(histogram)
    cumulative = list(accumulate(map(histogram.__getitem__, buckets_held)))
    if not cumulative or cumulative[-1] <= 0:
        return [None for _ in fractions]
    total = cumulative[-1]
    return [
        _three_figures(
            bucket_ms(
                buckets_held[bisect_left(cumulative, max(1, math.ceil(fraction * total)))],
                buckets,
            )
        )
        for fraction in fractions
    ]


def percentile(
    histogram: Mapping[int, int], fraction: float, buckets: LatencyBuckets = BUCKETS
) -> float | None:
    """``percentiles`` of one fraction."""
    [value] = percentiles(histogram, [fraction], buckets)
    return value


def _three_figures(value: float) -> float:
    return float(f"{value:.3g}")
