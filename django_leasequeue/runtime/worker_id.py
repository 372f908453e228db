"""Worker ids: who holds a lease, as shown in the admin and recorded in each attempt's error."""

import os
import socket
import uuid


def new_worker_id(suffix: str | None = None) -> str:
    """``host:pid[:suffix]:random``, unique across machines and restarts."""
    parts = [socket.gethostname(), str(os.getpid()), *([suffix] if suffix else [])]
    return ":".join([*parts, uuid.uuid4().hex[:6]])
