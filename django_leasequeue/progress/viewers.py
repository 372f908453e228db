"""Counting the pages that follow a job (or a workflow) live, so that workers publish only for
watched jobs."""

from uuid import UUID

from django_leasequeue.backend import lease_queue_backends


def watch(object_id: UUID | str, viewers: int = 1) -> None:
    """Tell workers a page follows the job (or workflow) live (``viewers=-1`` when it leaves).

    Counted in the Redis of every lease-queue backend (once per Redis keyspace). Unwatched jobs
    cost no channel-layer traffic; a viewer that joins between two checks of its worker is
    covered by the consumer's periodic database check.
    """
    seen = set()
    for backend in lease_queue_backends():
        wakeups = backend.wakeups
        where = (wakeups.redis_alias, wakeups.key_prefix)
        if wakeups.enabled and where not in seen:
            seen.add(where)
            wakeups.watch(str(UUID(str(object_id))), viewers)
