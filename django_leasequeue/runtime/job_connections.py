"""Django's connection rules at a sync job's boundaries, as at a request's, for less.

Django closes a thread's database connections that are unusable (an error since the last
commit, autocommit left off) or past ``CONN_MAX_AGE`` when a request starts and when it ends
(``close_old_connections``). That function finds the thread's connections by asking its
``asgiref`` local for every alias: two failed lookups, each raising and catching an exception,
per alias, which made the two calls around a job about a third of what a sync job cost more
than an async one. Only a connection that is open has anything to close, and Django announces
every connection it opens (``connection_created``) in the thread that opens it: a job thread
notes those and checks them alone, the same connections at the same moments.
"""

import threading

from django.db import close_old_connections, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created

_thread = threading.local()


def close_old_job_connections() -> None:
    """``close_old_connections()`` for this thread, at a job's start or end.

    The first call in a thread is Django's own, and from then on the thread notes the
    connections it opens; a connection closed (here, or by the job) is forgotten until it
    opens again.
    """
    opened: dict[int, BaseDatabaseWrapper] | None = getattr(_thread, "opened", None)
    if opened is None:
        close_old_connections()
        _thread.opened = {
            id(conn): conn
            for conn in connections.all(initialized_only=True)
            if conn.connection is not None
        }
        return
    for key, conn in list(opened.items()):
        conn.close_if_unusable_or_obsolete()
        if conn.connection is None:
            del opened[key]


def _note_opened(sender: type, connection: BaseDatabaseWrapper, **kwargs: object) -> None:
    """A connection opened in a job thread: checked at its boundaries from now on."""
    opened = getattr(_thread, "opened", None)
    if opened is not None:
        opened[id(connection)] = connection


connection_created.connect(_note_opened, dispatch_uid="leasequeue-job-connections")
