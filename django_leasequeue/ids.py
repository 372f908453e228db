"""Time-ordered job ids (UUIDv7, RFC 9562) so that the primary key index grows at its right edge."""

import os
import time
import uuid


def _uuid7_int() -> int:
    """48 bits of Unix milliseconds, the version and variant bits, then 74 random bits."""
    unix_ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10))
    value = (unix_ms & 0xFFFF_FFFF_FFFF) << 80 | rand & ((1 << 80) - 1)
    value = value & ~(0xF << 76) | 0x7 << 76  # version 7
    return value & ~(0x3 << 62) | 0x2 << 62  # RFC 4122 variant


def uuid7() -> uuid.UUID:
    return uuid.UUID(int=_uuid7_int())


def uuid7_strs(count: int) -> list[str]:
    """``count`` of ``str(uuid7())``, cheaper: one system call for all the random bits.

    Bulk enqueue makes one per job. Layout as in ``_uuid7_int``: 48 bits of milliseconds,
    version 7, 12 random bits, variant 0b10 and 62 random bits.
    """
    unix_ms = time.time_ns() // 1_000_000 & 0xFFFF_FFFF_FFFF
    stamp = f"{unix_ms:012x}"
    prefix = f"{stamp[:8]}-{stamp[8:]}-7"
    rand = os.urandom(10 * count)
    hex_ = rand.hex()
    ids = []
    for start in range(0, 20 * count, 20):
        h = hex_[start : start + 20]
        variant = "89ab"[rand[start // 2 + 9] & 0x3]  # 0b10 and two random bits
        ids.append(f"{prefix}{h[:3]}-{variant}{h[3:6]}-{h[6:18]}")
    return ids
