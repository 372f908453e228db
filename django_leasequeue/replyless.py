"""Redis commands sent without waiting for a reply: enqueue's wakeup push off the caller's path.

A wakeup is a hint (workers also poll, and the recover sweep re-sends wakeups for due jobs
nobody claimed), and RPUSH's reply, the list's new length, is read by nobody. So the push after
an enqueue's commit goes out on a connection of its own that has told Redis ``CLIENT REPLY
OFF``: the caller pays for one ``send()`` into the socket, not for a round trip to Redis and
back (a third of a single enqueue's time before, bench/peers.py). Pushes keep their order; a
command this process sends afterwards on another connection may be served first, because Redis
reads a long command in pieces and serves its other clients in between (an LLEN sent after a
push of 1,000 ids read the list before it in 1,124 of 2,000 tries on one host; after a push of
one id, in 1 of 2,000). Workers do not mind: a wakeup is popped when it is there. Tests that read
a wakeup list wait first (``wakeups_delivered`` in ``tests/support/helpers.py``).

What this gives up is hearing about a failure after the send. A connection that the server
closed (a restart) is noticed before sending, since it reads as ready, and the push goes out on
a new one; only a connection broken without a word (a network partition) swallows pushes, where
a round trip would have waited for its timeout and then dropped the push all the same.
"""

import os
import threading
from collections.abc import Sequence
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError

# What names a Redis server and database in a redis-py pool's connection settings.
_SERVER_SETTINGS = ("host", "port", "path", "db", "username")


def _server_of(pool: Any) -> tuple:
    """The server (and database) a pool connects to: threads that start at once may each get a
    pool of their own from django-redis for the same server, and they share one connection."""
    return (pool.connection_class, *(pool.connection_kwargs.get(key) for key in _SERVER_SETTINGS))


class ReplylessSender:
    """One connection per Redis server and database and per process (after a fork the child
    opens its own), shared by every thread and every backend instance (Django makes a backend
    per thread and async context) under one lock: a send is short."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connections: dict[tuple, Any] = {}  # server (_server_of) -> our connection to it
        self._open: set[tuple] = set()  # servers whose connection sent its last command
        self._pid = os.getpid()

    def send(self, client: Any, commands: Sequence[tuple[Any, ...]]) -> None:
        """Send ``commands`` on ``client``'s server (a redis-py ``Redis``) in one write.

        Raises redis-py's ConnectionError or TimeoutError when the server cannot be reached.
        """
        pool = client.connection_pool
        server = _server_of(pool)
        with self._lock:
            connection = self._connection_for(pool, server)
            try:
                if server in self._open:
                    try:
                        # Readable: the server closed it, or sent replies we never asked for.
                        stale = connection.can_read(timeout=0)
                    except RedisConnectionError:
                        stale = True
                    if stale:
                        connection.disconnect()  # the send below connects afresh
                connection.send_packed_command(
                    connection.pack_commands(commands), check_health=False
                )
            except BaseException:
                self._open.discard(server)
                connection.disconnect()
                raise
            self._open.add(server)

    def _connection_for(self, pool: Any, server: tuple) -> Any:
        if self._pid != os.getpid():  # a forked child: the parent's sockets are not ours
            self._connections, self._open, self._pid = {}, set(), os.getpid()
        connection = self._connections.get(server)
        if connection is None:
            # Built from the pool's settings but not taken from it: it never goes back.
            connection = pool.connection_class(**pool.connection_kwargs)
            connection.register_connect_callback(self._replies_off)
            self._connections[server] = connection
        return connection

    def _replies_off(self, connection: Any) -> None:
        """Run on every (re)connection, after redis-py's own handshake."""
        connection.send_command("CLIENT", "REPLY", "OFF", check_health=False)


#: The process's sender.
sender = ReplylessSender()
