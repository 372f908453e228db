"""The parent process of ``runworkers``: starts, restarts and stops the worker processes."""

import contextlib
import logging
import os
import signal
import time
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess

from django_leasequeue.conf import lease_queue_backend
from django_leasequeue.metrics import counters as metrics
from django_leasequeue.runtime.config import WorkerConfig
from django_leasequeue.runtime.process import STOP_NOW, preload, worker_main
from django_leasequeue.runtime.registry import mark_dead
from django_leasequeue.runtime.startup import (
    GAVE_UP_WAITING,
    StartupState,
    process_context,
    starting_child,
)
from django_leasequeue.runtime.worker_id import new_worker_id
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.executor import execute

logger = logging.getLogger(__name__)

_RESTART_DELAYS = (0.5, 1, 2, 5, 10, 30)
# A child that ran this long before dying restarts with the shortest delay again.
_HEALTHY_RUN_SECONDS = 60.0
# After a second stop signal, children still alive this long later are killed.
_KILL_AFTER_SECONDS = 10.0
# A slot whose process dies this many times in a row before it started ends runworkers
# (restart delays 0.5 + 1 + 2 + 5 s in between); in burst mode the first time does.
STARTUP_ATTEMPTS = 5


@dataclass
class _Slot:
    """One of the ``--processes`` places, and the process currently filling it."""

    index: int
    process: BaseProcess | None = None
    started_at: float = 0.0
    failures: int = 0
    restart_at: float = field(default=0.0)
    # The worker id the process runs under (its leases carry it).
    worker_id: str | None = None
    # What the process said about its start-up.
    startup: StartupState | None = None
    startup_failures: int = 0


class Supervisor:
    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.context = process_context(config.start_method)
        self.slots = [_Slot(i) for i in range(config.processes)]
        self.signals_received = 0
        self.hard_stop_at: float | None = None
        # Set when worker processes cannot start: runworkers stops and exits non-zero.
        self.gave_up = False
        self._killed: set[int | None] = set()
        self._startup_error_shown: str | None = None

    def run(self) -> int:
        """Run until stopped (or, in burst mode, until every worker has drained); exit status."""
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        preload()
        for slot in self.slots:
            if self.stopping:  # a signal while the others started: start no more
                break
            self._start(slot)
        exit_code = 0
        while any(slot.process is not None for slot in self.slots) or self._restarts_pending():
            self._wait_for_exit(timeout=0.2)
            for slot in self.slots:
                exit_code = self._reap(slot) or exit_code
            if self.hard_stop_at is not None and time.monotonic() > self.hard_stop_at:
                self._kill_all()
        logger.info("All worker processes stopped.")
        return 1 if self.gave_up else exit_code

    @property
    def stopping(self) -> bool:
        return bool(self.signals_received) or self.gave_up

    def _on_signal(self, signum: int, frame: object) -> None:
        self.signals_received += 1
        name = signal.Signals(signum).name
        if self.signals_received == 1:
            logger.info("%s: stopping workers gracefully (grace %ss).", name, self.config.grace)
        else:
            logger.warning("%s again: stopping workers now.", name)
            self.hard_stop_at = time.monotonic() + _KILL_AFTER_SECONDS
        # A worker treats every SIGTERM as the same graceful request (systemd may send it to the
        # whole group as well); only a second request here makes them stop now.
        stop = signal.SIGTERM if self.signals_received == 1 else STOP_NOW
        for slot in self.slots:
            if slot.process is not None and slot.process.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(slot.process.pid, stop)

    def _start(self, slot: _Slot) -> None:
        slot.worker_id = new_worker_id(suffix=f"w{slot.index}")
        reader, writer = self.context.Pipe(duplex=False)
        process = self.context.Process(
            target=worker_main,
            args=(self.config, slot.worker_id, writer, slot.index),
            name=f"leasequeue-worker-{slot.index}",
        )
        with starting_child(self.config.start_method):
            process.start()
        writer.close()
        slot.startup = StartupState(reader)
        slot.process, slot.started_at = process, time.monotonic()
        logger.info("Started worker process %d (pid %d).", slot.index, process.pid)
        if self.stopping and process.pid is not None:
            # The signal came while it was starting, before _on_signal could see it: pass it on,
            # or the loop would wait for a process that nobody asked to stop.
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGTERM)

    def _wait_for_exit(self, timeout: float) -> None:
        sentinels = [slot.process.sentinel for slot in self.slots if slot.process is not None]
        if sentinels:
            wait(sentinels, timeout=timeout)
        else:
            time.sleep(timeout)

    def _reap(self, slot: _Slot) -> int:
        """Handle the slot's process if it exited: restart it unless stopping; its exit status."""
        now = time.monotonic()
        if slot.process is None:
            if slot.restart_at and now >= slot.restart_at and not self.stopping:
                slot.restart_at = 0.0
                self._start(slot)
            return 0
        if slot.process.is_alive():
            return 0
        code = slot.process.exitcode
        slot.process.join()
        started = self._read_startup(slot)
        self._after_exit(slot, slot.process.pid, code, started)
        slot.process = None
        if self.stopping or (self.config.burst and code == 0):
            return 0 if code in (0, -signal.SIGTERM) else 1
        if not started:
            self._startup_failed(slot, code)
            return 0
        if self.config.burst and code == GAVE_UP_WAITING:  # said why; another try would wait too
            logger.critical(
                "Worker process %d gave up waiting for PostgreSQL (--max-wait): stopping "
                "runworkers.",
                slot.index,
            )
            self._give_up()
            return 1
        slot.startup_failures = 0
        self._expire_leases_of(slot)
        ran_for = now - slot.started_at
        slot.failures = 0 if ran_for > _HEALTHY_RUN_SECONDS else slot.failures + 1
        delay = _RESTART_DELAYS[min(max(slot.failures - 1, 0), len(_RESTART_DELAYS) - 1)]
        logger.error(
            "Worker process %d died (%s) after %.1fs; restarting in %ss.",
            slot.index,
            _describe_exit(code),
            ran_for,
            delay,
        )
        slot.restart_at = now + delay
        return 0

    def _after_exit(self, slot: _Slot, pid: int | None, code: int | None, started: bool) -> None:
        """Whatever the cause: the registry row of a worker that had started reads dead at once
        (unless it marked itself stopped), and its multiprocess metrics files are cleaned up.
        One that never started has no row (its start-up error is shown once, elsewhere)."""
        if pid is not None:
            metrics.mark_process_dead(pid)
        if started and slot.worker_id is not None and code != 0:
            database = lease_queue_backend(self.config.backend_alias).config.database
            mark_dead(database, slot.worker_id, _describe_exit(code))

    @staticmethod
    def _read_startup(slot: _Slot) -> bool:
        """Whether the slot's process that just exited had started (see ``startup``)."""
        if slot.startup is None:
            return False
        slot.startup.read()
        slot.startup.close()
        return slot.startup.started

    def _startup_failed(self, slot: _Slot, code: int | None) -> None:
        """A process died before it started: show its error once; restart it, unless that
        happened ``STARTUP_ATTEMPTS`` times in a row (or once in burst mode): then give up."""
        reported = slot.startup.error if slot.startup is not None else None
        error = reported or f"It died before it started ({_describe_exit(code)})."
        slot.startup_failures += 1
        if error != self._startup_error_shown:
            self._startup_error_shown = error
            logger.error("Worker process %d could not start:\n%s", slot.index, error)
        give_up = self.config.burst or slot.startup_failures >= STARTUP_ATTEMPTS
        if give_up:
            logger.critical(
                "Worker process %d could not start (%d attempt(s) in a row, error above): "
                "stopping runworkers.",
                slot.index,
                slot.startup_failures,
            )
            self._give_up()
            return
        delay = _RESTART_DELAYS[min(slot.startup_failures - 1, len(_RESTART_DELAYS) - 1)]
        logger.error(
            "Worker process %d could not start (attempt %d of %d, error above); retrying in %ss.",
            slot.index,
            slot.startup_failures,
            STARTUP_ATTEMPTS,
            delay,
        )
        slot.restart_at = time.monotonic() + delay

    def _give_up(self) -> None:
        """Stop the other worker processes gracefully; runworkers then exits non-zero."""
        self.gave_up = True
        for slot in self.slots:
            slot.restart_at = 0.0
            if slot.process is not None and slot.process.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(slot.process.pid, signal.SIGTERM)

    def _expire_leases_of(self, slot: _Slot) -> None:
        """A child that died holds leases nobody renews: end them now (fenced, by its worker
        id), so that the recover sweep hands its jobs on within a sweep, not a whole lease."""
        if slot.worker_id is None:
            return
        try:
            database = lease_queue_backend(self.config.backend_alias).config.database
            expired = execute(jobs_sql.expire_worker_leases(slot.worker_id), database)
        except Exception:  # the sweep recovers them when the leases run out
            logger.exception(
                "Could not end the leases of worker %s; they expire by themselves.", slot.worker_id
            )
            return
        if expired:
            logger.warning(
                "Ended %d lease(s) of dead worker %s: their jobs go to another worker now.",
                len(expired),
                slot.worker_id,
            )

    def _restarts_pending(self) -> bool:
        return not self.stopping and any(slot.restart_at for slot in self.slots)

    def _kill_all(self) -> None:
        for slot in self.slots:
            if slot.process is not None and slot.process.is_alive():
                if slot.process.pid not in self._killed:  # one message per process
                    self._killed.add(slot.process.pid)
                    logger.error("Worker process %d did not stop; killing it.", slot.index)
                slot.process.kill()


def _describe_exit(code: int | None) -> str:
    if code is not None and code < 0:
        return f"killed by {signal.Signals(-code).name}"
    return f"exit status {code}"
