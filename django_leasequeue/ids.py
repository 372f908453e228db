"""Time-ordered job ids (UUIDv7, RFC 9562) so that the primary key index grows at its right edge.

Ids made in one process follow each other in the order they were made, within a millisecond too
(RFC 9562, section 6.2, monotonic random): the 74 random bits of ids made in the millisecond of
the ones before are drawn above theirs (each id with room for one step of the first 12 bits;
without that room, in the next millisecond), and one call's ids are sorted. Jobs enqueued one
after another in a test's transaction share their ``enqueued_at`` (the transaction's start);
their ids still say which came first. The bits stay random and spread: the estimates of big
counts (``sql/functions/leasequeue_estimate_entries.sql``) read how densely ids follow each
other, and take the ids of one millisecond for one bulk enqueue's burst.
"""

import os
import time
import uuid

_RANDOM = 1 << 74
# The room each id drawn above the last one gets: one step of the first 12 random bits.
_STEP = 1 << 62
_RAND_B = _STEP - 1
_LOW_48 = (1 << 48) - 1
# This process's last id: its millisecond and its random bits (ids made by two threads in the
# same millisecond may interleave).
_last_ms = 0
_last_random = 0


def _start(count: int) -> tuple[int, int]:
    """The millisecond of ``count`` new ids, and the least their random bits may be."""
    unix_ms = time.time_ns() // 1_000_000 & 0xFFFF_FFFF_FFFF
    if unix_ms > _last_ms:
        return unix_ms, 0
    floor = _last_random + 1  # the same millisecond (or the clock stepped back)
    if _RANDOM - floor < count * _STEP:
        # No room for a step per id (the last id drawn near the top, or a batch of thousands):
        # the next millisecond, where they spread over all the random bits.
        return _last_ms + 1, 0
    return _last_ms, floor


def _random_bits(count: int, floor: int) -> list[int]:
    """``count`` random 74-bit values at least ``floor`` (above it, within a step per id when
    it is not 0), in increasing order."""
    rand = os.urandom(10 * count)
    span = _RANDOM if floor == 0 else count * _STEP
    if count == 1:
        return [floor + int.from_bytes(rand) % span]
    return sorted(
        floor + int.from_bytes(rand[at : at + 10]) % span for at in range(0, 10 * count, 10)
    )


def uuid7() -> uuid.UUID:
    """48 bits of Unix milliseconds, the version, 12 random bits, the variant bits, then 62
    random bits."""
    global _last_ms, _last_random
    unix_ms, floor = _start(1)
    [random] = _random_bits(1, floor)
    _last_ms, _last_random = unix_ms, random
    value = unix_ms << 80 | 0x7 << 76 | (random >> 62) << 64 | 0x2 << 62 | random & _RAND_B
    return uuid.UUID(int=value)


def uuid7_strs(count: int) -> list[str]:
    """``count`` of ``str(uuid7())``, in increasing order (bulk enqueue makes one per job, and
    its jobs keep the calls' order); cheaper: one system call for all the random bits, and for
    a batch in a new millisecond, the random hex digits taken as they come, then sorted."""
    global _last_ms, _last_random
    unix_ms, floor = _start(count)
    stamp = f"{unix_ms:012x}"
    prefix = f"{stamp[:8]}-{stamp[8:]}-7"
    if floor or count == 1:
        randoms = _random_bits(count, floor)
        ids = [
            f"{prefix}{random >> 62:03x}-{0x8000 | (random & _RAND_B) >> 48:04x}-"
            f"{random & _LOW_48:012x}"
            for random in randoms
        ]
        _last_random = randoms[-1]
    else:
        rand = os.urandom(10 * count)
        hex_ = rand.hex()
        ids = []
        for start in range(0, 20 * count, 20):
            h = hex_[start : start + 20]
            variant = "89ab"[rand[start // 2 + 9] & 0x3]  # 0b10 and two random bits
            ids.append(f"{prefix}{h[:3]}-{variant}{h[3:6]}-{h[6:18]}")
        ids.sort()
        last = ids[-1]
        _last_random = (
            int(last[15:18], 16) << 62 | (int(last[19:23], 16) & 0x3FFF) << 48 | int(last[24:], 16)
        )
    _last_ms = unix_ms
    return ids
