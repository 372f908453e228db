"""Time-ordered job ids (UUIDv7, RFC 9562) so that the primary key index grows at its right edge.

The 12 bits after the version hold the fraction of the millisecond (RFC 9562, section 6.2,
method 3): ids made a quarter of a microsecond apart or more follow each other in the order they
were made, not only those of different milliseconds. Jobs enqueued one after another in a test's
transaction share their ``enqueued_at`` (the transaction's start): their ids still say which
came first.
"""

import os
import time
import uuid

# Parts of a millisecond the 12 bits after the version count.
_FRACTIONS = 4096


def _stamp() -> tuple[int, int]:
    """48 bits of Unix milliseconds, and 12 bits of the fraction of the millisecond."""
    now = time.time_ns()
    return now // 1_000_000 & 0xFFFF_FFFF_FFFF, now % 1_000_000 * _FRACTIONS // 1_000_000


def _uuid7_int() -> int:
    """48 bits of Unix milliseconds, the version, 12 bits of the millisecond's fraction, the
    variant bits, then 62 random bits."""
    unix_ms, fraction = _stamp()
    rand = int.from_bytes(os.urandom(8))
    value = unix_ms << 80 | 0x7 << 76 | fraction << 64 | rand & ((1 << 64) - 1)
    return value & ~(0x3 << 62) | 0x2 << 62  # RFC 4122 variant


def uuid7() -> uuid.UUID:
    return uuid.UUID(int=_uuid7_int())


def uuid7_strs(count: int) -> list[str]:
    """``count`` of ``str(uuid7())``, cheaper: one system call for all the random bits, in
    increasing order (the calls of one bulk enqueue keep their order too).

    Bulk enqueue makes one per job. Layout as in ``_uuid7_int``: 48 bits of milliseconds,
    version 7, 12 bits of the millisecond's fraction, variant 0b10 and 62 random bits.
    """
    unix_ms, fraction = _stamp()
    stamp = f"{unix_ms:012x}"
    prefix = f"{stamp[:8]}-{stamp[8:]}-7{fraction:03x}-"
    rand = os.urandom(8 * count)
    hex_ = rand.hex()
    ids = []
    for start in range(0, 16 * count, 16):
        h = hex_[start : start + 16]
        variant = "89ab"[rand[start // 2] & 0x3]  # 0b10 and two random bits
        ids.append(f"{prefix}{variant}{h[1:4]}-{h[4:16]}")
    if count > 1:
        ids.sort()
    return ids
