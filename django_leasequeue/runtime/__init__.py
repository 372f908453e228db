"""The worker runtime behind ``manage.py runworkers``.

- ``config``: what runworkers was asked to run (``WorkerConfig``, plain data for child processes).
- ``supervisor``: the parent process; starts, restarts and stops the worker processes, and
  forwards the Unix signals that stop them.
- ``process``: a worker process's entry point (Django setup, logging, its SIGTERM handler,
  the event loop).
- ``worker``: one asyncio loop: claimer, heartbeat, recover sweep, completion writer.
- ``execution``: runs one claimed job and turns what happened into an ``Outcome``.
- ``handle``: one running job's state, shared by its runner, the heartbeat and its context.
- ``context``: the ``JobContext`` a ``takes_context`` task receives (progress, checkpoints).
- ``batching``, ``completions``, ``task_signals``: group commits of successes and batched
  Django task signals.
- ``database``: the worker's reconnecting psycopg connection.
"""
