"""The schedule table: one row per scheduled task, shared by every worker (see ``schedules``)."""

from django.db import models
from django.db.models.functions import Now
from django.utils.translation import gettext_lazy as _

from django_leasequeue.choices import Overlap


class Schedule(models.Model):
    """A schedule declared in code (``@task(cron=...)`` or ``@task(every=...)``).

    Workers write the declaration's columns when they start; a row whose task is gone from the
    code is marked ``retired`` and never fires. ``covered_until`` and ``version`` make a tick's
    job unique: the statement that inserts a job also advances them, and only if ``version`` is
    still the one its worker read (``fire_schedule`` in sql/schedules.sql).
    """

    task_path = models.CharField(max_length=255, unique=True)
    backend = models.CharField(max_length=100)
    cron = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    cron_timezone = models.CharField(max_length=100, null=True, blank=True)  # noqa: DJ001
    every = models.DurationField(null=True, blank=True)
    overlap = models.CharField(max_length=8, choices=Overlap, db_default=Overlap.SKIP)
    catch_up = models.PositiveIntegerField(db_default=1)

    paused = models.BooleanField(db_default=False)
    retired = models.BooleanField(db_default=False)
    # Every tick up to this time is handled (fired, skipped or missed); later ones are pending.
    covered_until = models.DateTimeField(db_default=Now())
    next_run_at = models.DateTimeField(db_default=Now())
    version = models.PositiveIntegerField(db_default=0)

    last_job_id = models.UUIDField(null=True, blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    skipped_count = models.PositiveBigIntegerField(db_default=0)
    missed_count = models.PositiveBigIntegerField(db_default=0)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        verbose_name = _("schedule")
        verbose_name_plural = _("schedules")
        ordering = ["task_path"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(cron__isnull=False) | models.Q(every__isnull=False),
                name="leasequeue_schedule_has_timing",
            ),
        ]

    def __str__(self) -> str:
        return self.task_path
