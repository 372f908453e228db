"""The scheduler service of a worker process: fires the ticks of the schedules declared in code.

Every worker process runs one; none leads. At start it writes its declared schedules to the
schedule table (retiring the backend's schedules no longer in the code), then checks about once
a second, with one statement, which of them are due, by the database's clock. A due schedule's
ticks are planned (``schedules.plan``) and each is fired by one statement that inserts the job
and advances the schedule's version together: of all the processes that see a tick, exactly
one inserts its job, and a process killed at any point leaves the tick either fired or pending.
"""

import asyncio
import contextlib
import logging
from concurrent.futures import Executor
from datetime import datetime

from django_leasequeue.backend import LeaseQueueBackend
from django_leasequeue.exceptions import InvalidSchedule
from django_leasequeue.ids import uuid7_strs
from django_leasequeue.outage_log import OutageLog
from django_leasequeue.runtime.database import Database
from django_leasequeue.schedules.declaration import Declaration, declaration_of
from django_leasequeue.schedules.discovery import scheduled_tasks
from django_leasequeue.schedules.firing import job_fields, tick_meta
from django_leasequeue.schedules.plan import plan_ticks
from django_leasequeue.sql.jobs import database_now
from django_leasequeue.sql.schedules import (
    DueSchedule,
    JobFields,
    due_schedules,
    fire_schedule,
    sync_schedules,
)
from django_leasequeue.tasks_framework import InvalidTask

logger = logging.getLogger(__name__)

# The longest an idle scheduler waits between two checks: a pause, a resume or a new schedule
# is seen within this long.
CHECK_SECONDS = 1.0
# How long a scheduler whose schedules could not be written waits before trying again.
_SYNC_RETRY_SECONDS = 10.0
# The shortest, so that a schedule due again at once (another process is firing it) is not
# checked in a tight loop.
_MIN_SLEEP_SECONDS = 0.01


class Scheduler:
    def __init__(
        self,
        backend: LeaseQueueBackend,
        db: Database,
        redis_calls: Executor,
        stopping: asyncio.Event,
    ) -> None:
        self.backend = backend
        # A stopping worker schedules no more: the workers that go on running do.
        self.stopping = stopping
        self.db = db
        self.redis_calls = redis_calls
        self.declarations: dict[str, Declaration] = {}
        self.fields: dict[str, JobFields] = {}
        # A check that keeps failing (say, a table PostgreSQL refuses) is logged as an outage,
        # not once a second.
        self.checks = OutageLog(
            "The schedule check", logger, meanwhile=f"checking again every {CHECK_SECONDS:g} s"
        )

    async def run(self) -> None:
        self._declare()
        while not await self._synced():
            await self._pause(_SYNC_RETRY_SECONDS)
            if self.stopping.is_set():
                return
        if not self.declarations:
            return
        paths = sorted(self.declarations)
        while not self.stopping.is_set():
            wait = CHECK_SECONDS
            try:
                check = await self.db.run(due_schedules(paths))
                soonest = check.next_due_at
                for due in check.due:
                    next_run_at = await self._fire(due, check.now)
                    soonest = min(soonest or next_run_at, next_run_at)
                if soonest is not None:
                    wait = (soonest - check.now).total_seconds()
            except Exception as exc:
                self.checks.failed(f"{type(exc).__name__}: {exc}", exc_info=exc)
            else:
                self.checks.succeeded()
            await self._pause(min(CHECK_SECONDS, max(_MIN_SLEEP_SECONDS, wait)))

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), seconds)

    def _declare(self) -> None:
        """This backend's valid schedules; invalid ones are logged (system checks refuse to
        start workers with them, so this happens only when the checks were skipped)."""
        for task in scheduled_tasks(self.backend.alias):
            try:
                declaration = declaration_of(task)
                self.fields[task.module_path] = job_fields(self.backend.enqueuer, declaration)
            except (InvalidSchedule, InvalidTask) as exc:
                logger.error("Schedule %s is invalid and does not run: %s", task.module_path, exc)
                continue
            self.declarations[task.module_path] = declaration

    async def _synced(self) -> bool:
        """Write the declared schedules; False (logged) when the database refused, say because
        the schedule table's migration was not applied yet: the worker's jobs go on."""
        try:
            await self._sync()
        except Exception:
            logger.exception(
                "Could not write the schedules; trying again in %ss.", _SYNC_RETRY_SECONDS
            )
            return False
        return True

    async def _sync(self) -> None:
        now = await self.db.run(database_now())
        declarations = list(self.declarations.values())
        next_run_ats = [next(iter(d.timing.ticks_after(now))) for d in declarations]
        retired = await self.db.run(
            sync_schedules(self.backend.alias, declarations, next_run_ats, now)
        )
        if retired:
            logger.warning("Schedules no longer in the code, now retired: %s", ", ".join(retired))
        logger.info("Scheduling %d schedule(s).", len(declarations))

    async def _fire(self, due: DueSchedule, now: datetime) -> datetime:
        """Carry out the plan of one due schedule; returns its next run. Stops at the first
        step another process got to first (it carries out the rest)."""
        declaration = self.declarations[due.task_path]
        fields = self.fields[due.task_path]
        plan = plan_ticks(declaration.timing, due.covered_until, now, declaration.catch_up)
        version = due.version
        # Without a tick to fire, one step records the missed ticks and the next run.
        steps = plan.fire or [plan.covered_until]
        woken: list[tuple[str, str]] = []
        try:
            for index, tick in enumerate(steps):
                later = steps[index + 1] if index + 1 < len(steps) else plan.next_run_at
                [job_id] = uuid7_strs(1)
                meta = "{}"
                if plan.fire and self.backend.hooks.before_enqueue:  # they may block: a thread
                    meta = await asyncio.to_thread(
                        tick_meta, self.backend.enqueuer, declaration, fields, job_id
                    )
                fired = await self.db.run(
                    fire_schedule(
                        declaration,
                        fields,
                        job_id=job_id,
                        version=version,
                        tick=tick,
                        enqueue=bool(plan.fire),
                        covered_until=tick,
                        next_run_at=later,
                        missed=plan.missed if index == 0 else 0,
                        meta=meta,
                    )
                )
                if fired is None:
                    break
                version = fired.version
                if index == 0 and plan.missed:
                    logger.warning(
                        "Schedule %s: %d missed tick(s) passed over (catch_up=%d).",
                        due.task_path,
                        plan.missed,
                        declaration.catch_up,
                    )
                if fired.job_id is not None:
                    woken.append((fields.queue_name, str(fired.job_id)))
                elif plan.fire:
                    logger.debug(
                        "Schedule %s: tick %s skipped, its previous run is unfinished.",
                        due.task_path,
                        tick.isoformat(),
                    )
        finally:  # the jobs inserted so far, even when a later step failed
            if woken:
                await asyncio.get_running_loop().run_in_executor(
                    self.redis_calls, self.backend.wakeups.push, woken
                )
        return plan.next_run_at
