"""The websockets that follow a job (or a workflow) live, so that workers publish only for
watched jobs; and the cap on the websockets one progress token may hold open.

Each websocket is a member of a Redis sorted set (``<key_prefix>:viewers:<id>``), never a step
of a counter: joining twice counts once, and leaving twice, or without having joined, changes
nothing, so the count can neither drift nor go below zero whatever the order in which
connects, disconnects and cancellations arrive. A member counts for ``VIEWER_TTL_SECONDS``
after it joined or last said it is still there (every ``REFRESH_SECONDS``), so the viewers of a
web server that died without saying goodbye stop counting within two minutes.

A page's bar opens one websocket, and its script reconnects with backoff; a client that opens
more with the same token is refused past ``MAX_SOCKETS_PER_TOKEN`` (its page then polls).
Staff, who sign in, are not capped.

Every call is sync (redis-py): the consumer runs them in a thread. A Redis failure is logged as
an outage of the backend's Redis and changes nothing for the page: its database checks cover
what live events would have said.
"""

from uuid import UUID

from redis.exceptions import RedisError

from django_leasequeue.conf import lease_queue_backends
from django_leasequeue.wakeups import Wakeups

# How long a websocket counts after it joined or last said it is still there.
VIEWER_TTL_SECONDS = 120
# How often an open websocket says it is still there.
REFRESH_SECONDS = 40.0
# Websockets one token may hold open at once: a page, a few tabs, a reconnect overlapping the
# socket it replaces.
MAX_SOCKETS_PER_TOKEN = 5


def _keyspaces() -> list[Wakeups]:
    """The Redis of every lease-queue backend, once per keyspace (alias and key prefix)."""
    seen: dict[tuple[str | None, str], Wakeups] = {}
    for backend in lease_queue_backends():
        wakeups = backend.wakeups
        if wakeups.enabled:
            seen.setdefault((wakeups.redis_alias, wakeups.key_prefix), wakeups)
    return list(seen.values())


class Viewer:
    """One websocket (``connection``: its channel name, unique) following ``object_id``,
    opened with ``token`` (None for staff)."""

    def __init__(self, object_id: UUID | str, connection: str, token: str | None) -> None:
        self.object_id = str(UUID(str(object_id)))
        self.connection = connection
        self.token = token

    def admit(self) -> bool:
        """Take one of the token's sockets; False (nothing held) when it holds all of them."""
        if self.token is None:
            return True
        for wakeups in _keyspaces():
            key = wakeups.token_key(self.token)
            try:
                [held] = wakeups.join([key], self.connection, VIEWER_TTL_SECONDS)
                if held > MAX_SOCKETS_PER_TOKEN:
                    wakeups.leave([key], self.connection)
                    return False
            except RedisError as exc:
                wakeups.outage.failed(f"websockets of a progress token not counted ({exc})")
            else:
                wakeups.outage.succeeded()
        return True

    def watch(self) -> None:
        """Count this websocket among the object's viewers (again: it is still there)."""
        for wakeups in _keyspaces():
            keys = [wakeups.watch_key(self.object_id)]
            if self.token is not None:
                keys.append(wakeups.token_key(self.token))
            try:
                wakeups.join(keys, self.connection, VIEWER_TTL_SECONDS)
            except RedisError as exc:
                wakeups.outage.failed(f"live viewers of {self.object_id} not counted ({exc})")
            else:
                wakeups.outage.succeeded()

    def leave(self) -> None:
        """Count this websocket out, as a viewer and as one of its token's sockets."""
        for wakeups in _keyspaces():
            keys = [wakeups.watch_key(self.object_id)]
            if self.token is not None:
                keys.append(wakeups.token_key(self.token))
            try:
                wakeups.leave(keys, self.connection)
            except RedisError as exc:
                wakeups.outage.failed(f"a viewer of {self.object_id} not counted out ({exc})")
            else:
                wakeups.outage.succeeded()
