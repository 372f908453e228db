"""Job ids (``ids.py``): time-ordered UUIDv7s."""

import time
import uuid

from django_leasequeue import ids as ids_module
from django_leasequeue.ids import uuid7, uuid7_strs


def test_uuid7_is_time_ordered_and_versioned():
    ids = [uuid7() for _ in range(1000)]
    assert all(i.version == 7 and i.variant == uuid.RFC_4122 for i in ids)
    assert [i.int >> 80 for i in ids] == sorted(i.int >> 80 for i in ids)
    assert len(set(ids)) == 1000


def test_uuid7_strs_are_valid_time_ordered_uuid7s():
    texts = uuid7_strs(1000) + uuid7_strs(1) + uuid7_strs(999)
    ids = [uuid.UUID(text) for text in texts]
    assert [str(i) for i in ids] == texts
    assert all(i.version == 7 and i.variant == uuid.RFC_4122 for i in ids)
    assert [i.int >> 80 for i in ids] == sorted(i.int >> 80 for i in ids)
    assert len(set(texts)) == 2000


def test_ids_made_one_after_another_follow_each_other_within_a_millisecond():
    """Monotonic random (RFC 9562, section 6.2): a test's jobs, enqueued in one transaction
    (one enqueued_at), are listed in the order they were made."""
    texts = [text for _ in range(3000) for text in uuid7_strs(1)] + uuid7_strs(5000)
    texts += [text for _ in range(100) for text in uuid7_strs(3)]
    assert texts == sorted(texts)
    assert len(set(texts)) == len(texts)
    ids = [uuid7() for _ in range(3000)]
    assert ids == sorted(ids)
    assert str(ids[-1]) < uuid7_strs(1)[0]  # the two share the order


def test_a_batchs_ids_spread_over_their_first_64_bits():
    """The estimates of big counts read how densely ids follow each other, and one
    millisecond's ids as one bulk enqueue's burst (leasequeue_estimate_entries): one bulk
    enqueue's ids must spread over their millisecond, not share their first 64 bits."""
    time.sleep(0.002)  # a millisecond of their own
    heads = [text[:18] for text in uuid7_strs(500)]
    assert heads == sorted(heads)
    assert len(set(heads)) > 400  # 500 draws among 4,096 values: about 470 apart
    # Drawn above the last ids in one millisecond, each id takes about half a step.
    ones = [text[:18] for _ in range(1000) for text in uuid7_strs(1)]
    batch = [text[:18] for text in uuid7_strs(500)]
    assert len(set(ones)) > 100 and len(set(batch)) > 100


def test_ids_after_one_drawn_near_the_top_of_its_millisecond_take_the_next_one():
    """Drawn above an id near the top of the random bits, a batch would share one head (its
    first 64 bits): with no room for a step per id, it takes the next millisecond and spreads."""
    now_ms = time.time_ns() // 1_000_000
    # This process's last id: this millisecond, 100 steps below the top.
    ids_module._last_ms = now_ms
    ids_module._last_random = (1 << 74) - 100 * (1 << 62)
    batch = uuid7_strs(500)
    assert int(batch[0][:8] + batch[0][9:13], 16) > now_ms  # next (or a later) millisecond
    heads = [text[:18] for text in batch]
    assert len(set(heads)) > 400
    ids_module._last_random = (1 << 74) - (1 << 61)  # half a step below the top
    one = uuid7()
    assert one.int >> 80 > now_ms
