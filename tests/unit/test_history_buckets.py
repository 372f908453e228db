"""Percentiles read back from a latency histogram (history/buckets.py): nearest rank, each the
middle of its bucket."""

import pytest

from django_leasequeue.history.buckets import BUCKETS, bucket_ms, percentile, percentiles


def test_percentiles_are_nearest_ranks_of_the_buckets():
    histogram = {1: 50, 40: 45, 60: 5}
    assert percentiles(histogram, (0.5, 0.95, 0.96, 1.0)) == [
        pytest.approx(bucket_ms(1), rel=0.01),
        pytest.approx(bucket_ms(40), rel=0.01),
        pytest.approx(bucket_ms(60), rel=0.01),
        pytest.approx(bucket_ms(60), rel=0.01),
    ]
    assert percentile({7: 1}, 0.0) == pytest.approx(bucket_ms(7), rel=0.01)


def test_an_empty_histogram_has_no_percentile():
    assert percentiles({}, (0.5, 0.95)) == [None, None]
    assert percentiles({3: 0}, (0.5,)) == [None]


def test_a_bucket_stands_for_the_middle_of_its_bounds():
    # Bucket k >= 1 holds [base * 2^((k-1)/steps), base * 2^(k/steps)).
    low, high = BUCKETS.base_ms * 2 ** (39 / 4), BUCKETS.base_ms * 2 ** (40 / 4)
    assert low < bucket_ms(40) < high
    assert bucket_ms(40) == pytest.approx((low * high) ** 0.5)
    assert bucket_ms(0) == BUCKETS.base_ms / 2
    assert bucket_ms(BUCKETS.last + 5) == bucket_ms(BUCKETS.last)
