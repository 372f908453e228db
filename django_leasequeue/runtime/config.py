"""What ``runworkers`` was asked to run; plain data so it can cross into spawned processes."""

import sys
from dataclasses import dataclass
from typing import Literal

# How worker processes start: forked from the supervisor, which has set Django up already (a
# child is serving in milliseconds), on Linux; spawned elsewhere (macOS's system libraries are
# not safe to fork without exec).
DEFAULT_START_METHOD: Literal["fork", "spawn"] = "fork" if sys.platform == "linux" else "spawn"


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerConfig:
    backend_alias: str = "default"
    processes: int = 1
    concurrency: int = 10
    # None means every queue.
    queues: tuple[str, ...] | None = ("default",)
    # Seconds in-flight jobs get to finish on shutdown before they are released.
    grace: float = 30.0
    # Drain what is due, then exit 0.
    burst: bool = False
    # A burst whose PostgreSQL does not answer for this long gives up and exits non-zero (a
    # service waits for ever: it has nowhere else to be).
    max_wait: float = 60.0
    log_level: str = "INFO"
    # "fork" or "spawn" (see runtime.startup).
    start_method: Literal["fork", "spawn"] = DEFAULT_START_METHOD
