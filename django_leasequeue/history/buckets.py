"""Latency histograms: the buckets the history stores latencies in, and percentiles read back.

Four buckets per doubling from 0.1 ms: a percentile read from a bucket (its geometric middle) is
within 9 % of the latency it stands for, and a minute's histogram holds a dozen-odd buckets.
"""

import math
from collections.abc import Mapping

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


def percentile(
    histogram: Mapping[int, int], fraction: float, buckets: LatencyBuckets = BUCKETS
) -> float | None:
    """The latency (ms) below which ``fraction`` of the histogram's samples fall (nearest rank),
    rounded to three significant figures; None for an empty histogram."""
    total = sum(histogram.values())
    if total <= 0:
        return None
    rank = max(1, math.ceil(fraction * total))
    seen = 0
    for bucket in sorted(histogram):
        seen += histogram[bucket]
        if seen >= rank:
            return _three_figures(bucket_ms(bucket, buckets))
    raise AssertionError("unreachable: the ranks add up to the total")


def _three_figures(value: float) -> float:
    return float(f"{value:.3g}")
