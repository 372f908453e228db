"""``manage.py prunejobs``: delete finished jobs older than a cutoff, in batches."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from django_leasequeue.choices import JobStatus
from django_leasequeue.conf import lease_queue_backend
from django_leasequeue.management import pruning
from django_leasequeue.management.arguments import non_negative_float, positive_int
from django_leasequeue.management.progress_line import ProgressLine
from django_leasequeue.management.terminal import printable
from django_leasequeue.tasks_framework import InvalidTaskBackend


class Command(BaseCommand):
    help = (
        "Delete finished jobs (succeeded, failed, cancelled) older than --days, in batches, "
        "then the finished workflows left without steps."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--days",
            type=non_negative_float,
            required=True,
            help="Keep jobs that ended more recently.",
        )
        parser.add_argument(
            "--status",
            action="append",
            # Plain strings, so that a refusal lists them as --help does ({succeeded,...}).
            choices=[str(status) for status in JobStatus.terminal()],
            help="Only jobs that ended so (repeatable; default: every finished status).",
        )
        parser.add_argument(
            "--batch", type=positive_int, default=5000, help="Rows per DELETE statement."
        )
        parser.add_argument("--backend", default="default", help="The TASKS alias.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            backend = lease_queue_backend(options["backend"])
        except InvalidTaskBackend as exc:
            raise CommandError(printable(f"--backend {options['backend']!r}: {exc}")) from exc
        terminal = self.stdout.isatty()  # progress on a terminal; quiet under cron
        progress = ProgressLine(self.stdout) if terminal else None
        deleted = pruning.prune(
            backend.config.database,
            statuses=options["status"] or JobStatus.terminal(),
            older_than_seconds=options["days"] * 86400,
            batch=options["batch"],
            on_progress=progress,
        )
        if progress is not None:
            progress.end()
        workflows = pruning.prune_workflows(
            backend.config.database,
            older_than_seconds=options["days"] * 86400,
            batch=options["batch"],
        )
        jobs, days = _count(deleted, "finished job"), _count(options["days"], "day")
        self.stdout.write(f"Deleted {jobs} older than {days}.")
        if workflows:
            self.stdout.write(
                f"Deleted {_count(workflows, 'finished workflow')} left without steps."
            )


def _count(number: float, noun: str) -> str:
    """``1 day``, ``14 days``, ``0.5 days``, ``1,200 finished jobs``."""
    shown = f"{int(number):,}" if float(number).is_integer() else f"{number:g}"
    return f"{shown} {noun}" if number == 1 else f"{shown} {noun}s"
