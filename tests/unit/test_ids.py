"""Job ids (``ids.py``): time-ordered UUIDv7s."""

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
