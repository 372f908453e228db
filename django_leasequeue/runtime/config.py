"""What ``runworkers`` was asked to run; plain data so it can cross into spawned processes."""

from dataclasses import dataclass


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
