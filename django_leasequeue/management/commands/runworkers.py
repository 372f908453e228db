"""``manage.py runworkers``: parse the arguments, hand over to the runtime's supervisor."""

import logging
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from django_leasequeue.backend import LeaseQueueBackend
from django_leasequeue.checks import metrics_ports_problem
from django_leasequeue.conf import lease_queue_backend
from django_leasequeue.management.arguments import (
    non_negative_float,
    positive_float,
    positive_int,
)
from django_leasequeue.management.terminal import printable
from django_leasequeue.queue_names import queue_name_problem
from django_leasequeue.runtime.config import WorkerConfig
from django_leasequeue.runtime.logs import configure_logging
from django_leasequeue.runtime.supervisor import Supervisor
from django_leasequeue.tasks_framework import InvalidTaskBackend

_LOG_LEVELS = {0: "WARNING", 1: "INFO", 2: "DEBUG", 3: "DEBUG"}
_DEFAULTS = WorkerConfig()


class Command(BaseCommand):
    help = "Run worker processes that claim and run jobs of a LeaseQueueBackend."
    requires_system_checks = ["database"]

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--processes", type=positive_int, default=_DEFAULTS.processes, help="Worker processes."
        )
        parser.add_argument(
            "--concurrency",
            type=positive_int,
            default=_DEFAULTS.concurrency,
            help="Jobs in flight per process.",
        )
        parser.add_argument(
            "--queues",
            default=",".join(_DEFAULTS.queues or ["*"]),
            help="Comma-separated queue names, or * for all.",
        )
        parser.add_argument(
            "--backend", default=_DEFAULTS.backend_alias, help="The TASKS alias to run."
        )
        parser.add_argument(
            "--grace",
            type=non_negative_float,
            default=_DEFAULTS.grace,
            help="Seconds in-flight jobs get to finish on shutdown before they are released.",
        )
        parser.add_argument(
            "--burst", action="store_true", help="Run what is due, then exit (tests, cron, CI)."
        )
        parser.add_argument(
            "--start-method",
            choices=["fork", "spawn"],
            default=_DEFAULTS.start_method,
            help="How worker processes start: forked from this one, Django already set up "
            "(Linux's default), or spawned, each setting Django up anew (elsewhere; also for "
            "settings that create what cannot cross a fork). Default here: "
            f"{_DEFAULTS.start_method}.",
        )
        parser.add_argument(
            "--max-wait",
            type=positive_float,
            metavar="SECONDS",
            help="With --burst: give up and exit non-zero when PostgreSQL has not answered for "
            f"this long (default {_DEFAULTS.max_wait:g}).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        alias = options["backend"]
        try:
            backend = lease_queue_backend(alias)
        except InvalidTaskBackend as exc:
            raise CommandError(printable(f"--backend {alias!r}: {exc}")) from exc
        # Django has no "tasks" check tag to require: run the backend's checks here, before any
        # worker process could crash on them in a loop.
        errors = [message for message in backend.check() if message.is_serious()]
        if errors:
            raise CommandError(
                "TASKS[{!r}] is not usable:\n{}".format(
                    alias, "\n".join(printable(f"  {error.id}: {error.msg}") for error in errors)
                )
            )
        if options["max_wait"] is not None and not options["burst"]:
            raise CommandError(
                "--max-wait applies to --burst only: without it, workers wait for PostgreSQL "
                "for as long as it takes."
            )
        if problem := metrics_ports_problem(backend.config, options["processes"]):
            raise CommandError(printable(f"TASKS[{alias!r}] OPTIONS {problem}"))
        config = WorkerConfig(
            backend_alias=alias,
            processes=options["processes"],
            concurrency=options["concurrency"],
            queues=self._queues(options["queues"], backend),
            grace=options["grace"],
            burst=options["burst"],
            max_wait=options["max_wait"] or _DEFAULTS.max_wait,
            log_level=_LOG_LEVELS[options["verbosity"]],
            start_method=options["start_method"],
        )
        configure_logging(config.log_level, "supervisor")
        if config.queues and (unserved := sorted(backend.queues - set(config.queues))):
            logging.getLogger(__name__).info(
                "Serving queue(s) %s; not serving the declared queue(s) %s.",
                printable(", ".join(config.queues)),
                printable(", ".join(unserved)),
            )
        exit_code = Supervisor(config).run()
        if exit_code:
            raise CommandError("A worker process failed.", returncode=exit_code)

    @staticmethod
    def _queues(text: str, backend: LeaseQueueBackend) -> tuple[str, ...] | None:
        if text.strip() == "*":
            return None
        queues = tuple(name.strip() for name in text.split(",") if name.strip())
        if not queues:
            raise CommandError("--queues needs at least one queue name, or *.")
        for name in queues:
            if (problem := queue_name_problem(name)) is not None:
                raise CommandError(f"--queues: {problem}")
        unknown = sorted(set(queues) - backend.queues) if backend.queues else []
        if unknown:
            raise CommandError(
                printable(
                    f"--queues: {', '.join(unknown)} not in TASKS[{backend.alias!r}]['QUEUES'] "
                    f"({', '.join(sorted(backend.queues))})."
                )
            )
        return queues
