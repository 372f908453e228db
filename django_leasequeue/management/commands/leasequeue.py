"""``manage.py leasequeue status [--json] [--watch] [--max-age SECONDS]``: the operator's view;
``manage.py leasequeue pause QUEUE [--reason TEXT]`` and ``resume QUEUE``: stop and restart
every worker's claims from a queue.

The command only parses arguments; ``status_report`` builds the report, ``status_output`` lays
it out as text or JSON, the backend pauses and resumes (``control/pausing.py``).
"""

import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from django_leasequeue.backend import LeaseQueueBackend
from django_leasequeue.conf import lease_queue_backend
from django_leasequeue.control.pausing import REASON_MAX_LENGTH
from django_leasequeue.exceptions import PauseFailed
from django_leasequeue.management import status_output, status_report
from django_leasequeue.management.arguments import non_negative_float, positive_float
from django_leasequeue.management.terminal import printable
from django_leasequeue.tasks_framework import InvalidTaskBackend

# ANSI: cursor home, clear the screen (a --watch refresh in a terminal).
_CLEAR = "\x1b[H\x1b[2J"


class Command(BaseCommand):
    help = (
        "Operate the job queue. 'status': queues, live workers, and whether all is well; "
        "'pause' / 'resume': stop and restart every worker's claims from a queue."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        commands = parser.add_subparsers(
            dest="subcommand", required=True, metavar="{status,pause,resume}"
        )
        status = commands.add_parser(
            "status",
            help="Per queue counts, oldest due job and rate; live workers. Exit status 1 when "
            "no worker is alive or a queue's oldest due job is older than --max-age.",
            description="Exit status 1 when no worker is alive or a queue's oldest due job is "
            "older than --max-age (a container health check).",
        )
        status.add_argument(
            "--json",
            action="store_true",
            help="One JSON object (schema: docs/status.schema.json), for programs.",
        )
        status.add_argument(
            "--watch", action="store_true", help="Refresh in place until interrupted."
        )
        status.add_argument(
            "--interval",
            type=positive_float,
            default=2.0,
            help="Seconds between --watch refreshes (default 2).",
        )
        status.add_argument(
            "--max-age",
            type=non_negative_float,
            metavar="SECONDS",
            help="Unhealthy when a queue's oldest due job has waited longer than this.",
        )
        status.add_argument("--backend", default="default", help="The TASKS alias.")
        pause = commands.add_parser(
            "pause",
            help="Stop every worker claiming jobs of QUEUE until it is resumed (jobs running "
            "finish, enqueues still land). Kept in PostgreSQL: survives restarts.",
        )
        pause.add_argument("queue", metavar="QUEUE")
        pause.add_argument(
            "--reason",
            default="",
            help="Why, as status and the admin show it "
            f"(at most {REASON_MAX_LENGTH:,} characters).",
        )
        pause.add_argument("--backend", default="default", help="The TASKS alias.")
        resume = commands.add_parser(
            "resume", help="Let workers claim jobs of QUEUE again, waking them at once."
        )
        resume.add_argument("queue", metavar="QUEUE")
        resume.add_argument("--backend", default="default", help="The TASKS alias.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            backend = lease_queue_backend(options["backend"])
        except InvalidTaskBackend as exc:
            raise CommandError(printable(f"--backend {options['backend']!r}: {exc}")) from exc
        if options["subcommand"] == "pause":
            self._pause(backend, options["queue"], options["reason"])
            return
        if options["subcommand"] == "resume":
            self._resume(backend, options["queue"])
            return
        in_terminal = self.stdout.isatty()
        try:
            while True:
                report = status_report.build(backend, max_age_seconds=options["max_age"])
                if options["json"]:
                    self.stdout.write(json.dumps(status_output.as_json(report)))
                else:
                    clear = _CLEAR if options["watch"] and in_terminal else ""
                    self.stdout.write(clear + status_output.render_text(report))
                if not options["watch"]:
                    break
                self.stdout.flush()
                time.sleep(options["interval"])
                if not in_terminal and not options["json"]:
                    self.stdout.write("")
        except KeyboardInterrupt:
            pass
        if report.problems:
            raise CommandError(printable("unhealthy: " + "; ".join(report.problems)), returncode=1)

    def _pause(self, backend: LeaseQueueBackend, queue: str, reason: str) -> None:
        try:
            newly = backend.pause_queue(queue, reason)
        except (ValueError, PauseFailed) as exc:
            raise CommandError(printable(exc)) from exc
        if newly:
            self.stdout.write(printable(f"Queue {queue!r} paused: no worker claims its jobs."))
        else:
            self.stdout.write(printable(f"Queue {queue!r} was paused already; reason updated."))

    def _resume(self, backend: LeaseQueueBackend, queue: str) -> None:
        try:
            resumed = backend.resume_queue(queue)
        except ValueError as exc:
            raise CommandError(printable(exc)) from exc
        if resumed:
            self.stdout.write(printable(f"Queue {queue!r} resumed."))
        else:
            self.stdout.write(printable(f"Queue {queue!r} was not paused."))
