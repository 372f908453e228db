"""Time-ordered job ids (UUIDv7, RFC 9562) so that the primary key index grows at its right edge."""

import os
import time
import uuid


def uuid7() -> uuid.UUID:
    """Return a UUIDv7: 48 bits of Unix milliseconds, then 74 random bits."""
    unix_ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10))
    value = (unix_ms & 0xFFFF_FFFF_FFFF) << 80 | rand & ((1 << 80) - 1)
    value = value & ~(0xF << 76) | 0x7 << 76  # version 7
    value = value & ~(0x3 << 62) | 0x2 << 62  # RFC 4122 variant
    return uuid.UUID(int=value)
