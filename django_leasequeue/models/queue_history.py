"""The queues' history: a row per queue and minute, and per 15 minutes and hour, rolled up
from the job table by the workers' recover sweep (``runtime/history_rollup.py``), so that the
dashboard shows a week whatever the jobs' retention. The rows hold counts and histograms only:
they outlive the jobs they count."""

from typing import Any

from django.db import models
from django.utils.translation import gettext_lazy as _


class IntegerArrayField(models.Field):
    """A PostgreSQL ``integer[]``, read and written as a list of ints (psycopg adapts both
    ways): ``django.contrib.postgres``'s ArrayField would make projects install that app."""

    def db_type(self, connection: Any) -> str:
        return "integer[]"

    def deconstruct(self) -> Any:
        """Under the path migrations know it by (``django_leasequeue.models``)."""
        name, _path, args, kwargs = super().deconstruct()
        return name, "django_leasequeue.models.IntegerArrayField", args, kwargs


class QueueHistory(models.Model):
    """What one queue did in one span of time: a minute (``seconds`` 60), or 15 minutes or an
    hour (900, 3600: their minutes merged once the span has ended, so that a day or a week is
    read from a hundred-odd rows per queue).

    ``succeeded`` and ``failed`` count jobs that finished in the span (by their final status:
    a job that failed once and then succeeded counts once, as succeeded). The pickup latency
    (due to claimed, per claim made in the span) and the run time (the last attempt's start to
    finish, per job finished in the span) are histograms: latency buckets
    (``history/buckets.py``) in increasing order and their counts, two arrays of one length
    (arrays, not JSON: a week's rows are decoded in a few milliseconds). ``backlog`` is the
    number of due jobs not started, measured right after the span's last minute measured
    ended (NULL when no minute of the span was: a minute rolled up late, after an outage, has
    none, since a backlog cannot be measured in the past); ``backlog_estimated`` says it is an
    estimate (above
    ``history.series.BACKLOG_EXACT_UP_TO``).
    """

    seconds = models.IntegerField()
    start = models.DateTimeField()
    queue_name = models.CharField(max_length=100)
    succeeded = models.IntegerField(db_default=0)
    failed = models.IntegerField(db_default=0)
    pickup_buckets = IntegerArrayField(default=list)
    pickup_counts = IntegerArrayField(default=list)
    run_buckets = IntegerArrayField(default=list)
    run_counts = IntegerArrayField(default=list)
    backlog = models.BigIntegerField(null=True)
    backlog_estimated = models.BooleanField(db_default=False)

    class Meta:
        db_table = "leasequeue_queue_history"
        verbose_name = _("queue history")
        verbose_name_plural = _("queue history")
        default_permissions = ()
        constraints = [
            # A span is written once (INSERT ... ON CONFLICT DO NOTHING): concurrent sweeps
            # of several workers cannot count it twice. Its index serves the dashboard's reads
            # (one span length, a range of starts).
            models.UniqueConstraint(
                fields=["seconds", "start", "queue_name"], name="leasequeue_queue_history_span"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.queue_name} {self.start:%Y-%m-%d %H:%M} ({self.seconds} s)"


class QueueHistoryMark(models.Model):
    """How far the history is rolled up: one row (``id`` 1), ``rolled_up_to`` the end of the
    last minute written. It only moves forward, and a sweep that finds it behind catches up."""

    id = models.SmallIntegerField(primary_key=True)
    rolled_up_to = models.DateTimeField()

    class Meta:
        db_table = "leasequeue_queue_history_mark"
        verbose_name = _("queue history mark")
        verbose_name_plural = _("queue history marks")
        default_permissions = ()

    def __str__(self) -> str:
        return f"rolled up to {self.rolled_up_to:%Y-%m-%d %H:%M}"
