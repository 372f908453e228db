"""Job ids (``ids.py``): time-ordered UUIDv7s."""

import time
import uuid

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
    """The fraction of the millisecond after the version (RFC 9562, method 3): a test's jobs,
    enqueued in one transaction (one enqueued_at), are listed in the order they were made."""
    texts = [text for _ in range(200) for text in uuid7_strs(1)] + uuid7_strs(500)
    assert texts == sorted(texts)
    ids = []
    for _ in range(200):
        ids.append(uuid7())
        time.sleep(0.000_001)
    assert [i.int >> 64 for i in ids] == sorted(i.int >> 64 for i in ids)
