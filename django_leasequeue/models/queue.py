"""The paused queues: the one table of queue control (the other rules live on the job row)."""

from django.db import models
from django.db.models.functions import Now
from django.utils.translation import gettext_lazy as _


class PausedQueue(models.Model):
    """A queue no worker claims from until it is resumed (``backend.pause_queue``).

    Every claim statement reads this table, so it stays tiny: one row per paused queue. Pausing
    locks it (``pause_queue`` in sql/queue_control.sql): a claim that started before the pause
    committed has finished when the pause returns.
    """

    queue_name = models.CharField(max_length=100, primary_key=True)
    reason = models.TextField(blank=True, db_default="")
    paused_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "leasequeue_paused_queue"
        verbose_name = _("paused queue")
        verbose_name_plural = _("paused queues")
        # Staff pause and resume queues on the job list's summary with one permission,
        # django_leasequeue.pause_queue, made by control/permission.py.
        default_permissions = ()

    def __str__(self) -> str:
        return self.queue_name
