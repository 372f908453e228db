"""The worker runtime behind ``manage.py runworkers``.

- ``supervisor``: the parent process; starts, restarts and stops the worker processes.
- ``process``: a worker process's entry point (Django setup, logging, signals, event loop).
- ``worker``: one asyncio loop: claimer, heartbeat, recover sweep, completion flusher.
- ``execution``: runs one claimed job and turns what happened into an outcome.
- ``context``: the ``TaskContext`` a ``takes_context`` task receives (progress, checkpoints).
- ``database``: the worker's reconnecting psycopg connection.
"""
