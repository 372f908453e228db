"""The rate limits' buckets: one row per limit key, shared by every worker (``flow``)."""

from django.db import models
from django.utils.translation import gettext_lazy as _


class RateBucket(models.Model):
    """The state of one rate limit (GCRA): the theoretical arrival time of the next start.

    Kept in PostgreSQL, written in the claim's transaction: a start and its token are one commit,
    so losing or flushing Redis cannot raise the rate.
    """

    key = models.CharField(max_length=255, primary_key=True)
    tat = models.DateTimeField()

    class Meta:
        db_table = "leasequeue_rate_bucket"
        verbose_name = _("rate bucket")
        verbose_name_plural = _("rate buckets")

    def __str__(self) -> str:
        return f"{self.key}: next start at {self.tat:%H:%M:%S.%f}"
