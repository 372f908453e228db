"""Entry point of one worker process (forked or spawned by the supervisor, see ``startup``)."""

import asyncio
import gc
import logging
import os
import signal
import sys
from multiprocessing.connection import Connection

from django_leasequeue.runtime import job_logging
from django_leasequeue.runtime.config import WorkerConfig
from django_leasequeue.runtime.logs import configure_logging
from django_leasequeue.runtime.startup import (
    GAVE_UP_WAITING,
    STARTUP_FAILED,
    StartupReporter,
    become_worker,
)

# The signal the supervisor sends a worker process to stop now (release its jobs at once).
STOP_NOW = signal.SIGUSR1


def preload() -> None:
    """In the supervisor, before its children start: import what a worker process runs, so
    that forked ones find it imported, then move every object there is to the collector's permanent
    generation (``gc.freeze``): the children's full collections do not walk those again (nor
    touch, and so copy, their memory pages), and neither does the supervisor's exit, which
    took 0.3 s of a short ``--burst`` collecting them. (Not imported at the top of this module:
    a spawned child imports it to find ``worker_main`` before Django is set up, and the app's
    modules need the settings.)"""
    import django_leasequeue.runtime.worker  # noqa: F401

    gc.freeze()


def worker_main(
    config: WorkerConfig,
    worker_id: str | None = None,
    startup: Connection | None = None,
    slot: int = 0,
) -> None:
    """Set up Django, run one Worker until it stops, and exit without waiting for job threads.

    Until the worker has started, an error goes to the supervisor through ``startup``. ``slot``
    is the process's index (its metrics port is ``metrics_port + slot``)."""
    become_worker()
    reporter = StartupReporter(startup)
    try:
        import django
        from django.apps import apps

        if not apps.ready:  # spawned, not forked from the supervisor (see startup)
            django.setup()
        configure_logging(config.log_level, f"worker {os.getpid()}")
        job_logging.install()  # records about a job carry its id, task, queue and attempt
        # Not asyncio.run: its teardown waits for every task left, and a statement PostgreSQL
        # never answers must not hold up the exit (the worker bounded its own stop already).
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        code = loop.run_until_complete(_run(config, worker_id, reporter, slot))
    except BaseException:
        if reporter.done:
            raise
        reporter.failed()
        code = STARTUP_FAILED
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    # Sync tasks cut off by a timeout or a lost lease may still be running in their threads;
    # their outcome is already discarded and fenced out, so do not wait for them.
    os._exit(code)


async def _run(
    config: WorkerConfig, worker_id: str | None, reporter: StartupReporter, slot: int
) -> int:
    # Imported here for a spawned child (see preload).
    from django_leasequeue.conf import lease_queue_backend
    from django_leasequeue.metrics import counters
    from django_leasequeue.runtime.worker import WorkerLoop

    backend = lease_queue_backend(config.backend_alias)
    if backend.config.metrics_port is not None:  # each process on its own port
        counters.serve(backend.config.metrics_port + slot)
    worker = WorkerLoop(backend, config, worker_id)
    loop = asyncio.get_running_loop()
    # SIGTERM asks for a graceful stop (however many times it comes); the supervisor sends
    # SIGUSR1 when its own second signal asks to stop now.
    loop.add_signal_handler(signal.SIGTERM, worker.request_stop)
    loop.add_signal_handler(STOP_NOW, worker.request_stop_now)
    await worker.run(on_started=reporter.started)
    if worker.gave_up is not None:
        if not reporter.done:  # the supervisor shows it as the reason it could not start
            reporter.failed(worker.gave_up)
        return GAVE_UP_WAITING
    return 1 if worker.failed else 0
