"""Entry point of one worker process (spawned by the supervisor)."""

import asyncio
import logging
import os
import signal
import sys

from django_leasequeue.runtime.config import WorkerConfig
from django_leasequeue.runtime.logs import configure_logging

# The signal the supervisor sends a worker process to stop now (release its jobs at once).
STOP_NOW = signal.SIGUSR1


def worker_main(config: WorkerConfig, worker_id: str | None = None) -> None:
    """Set up Django, run one Worker until it stops, and exit without waiting for job threads."""
    import django

    django.setup()
    configure_logging(config.log_level, f"worker {os.getpid()}")
    # Ctrl-C reaches the whole process group; only the supervisor's SIGTERM should stop us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    code = asyncio.run(_run(config, worker_id))
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    # Sync tasks cut off by a timeout or a lost lease may still be running in their threads;
    # their outcome is already discarded and fenced out, so do not wait for them.
    os._exit(code)


async def _run(config: WorkerConfig, worker_id: str | None) -> int:
    # Imported here, not at the top: a spawned child imports this module to find worker_main
    # before Django is set up, and the app's modules need the settings.
    from django_leasequeue.backend import lease_queue_backend
    from django_leasequeue.runtime.worker import Worker
    from django_leasequeue.tasks_framework import InvalidTaskBackend

    try:
        backend = lease_queue_backend(config.backend_alias)
    except InvalidTaskBackend as exc:
        logging.getLogger(__name__).error("%s", exc)
        return 2
    worker = Worker(backend, config, worker_id)
    loop = asyncio.get_running_loop()
    # SIGTERM asks for a graceful stop (however many times it comes); the supervisor sends
    # SIGUSR1 when its own second signal asks to stop now.
    loop.add_signal_handler(signal.SIGTERM, worker.request_stop)
    loop.add_signal_handler(STOP_NOW, worker.request_stop_now)
    await worker.run()
    return 1 if worker.failed else 0
