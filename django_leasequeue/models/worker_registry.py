"""The worker registry: one row per ``runworkers`` process (``runtime/registry.py``)."""

from datetime import datetime

from django.db import models
from django.utils.translation import gettext_lazy as _

from django_leasequeue.choices import WorkerState


class Worker(models.Model):
    """One worker process of ``runworkers``, kept fresh by its heartbeat tick
    (``runtime/registry.py``); rows of workers gone for ``worker_retention_seconds`` are
    deleted. Jobs point here through their ``worker_id``."""

    id = models.CharField(primary_key=True, max_length=100)  # the lease holder's worker id
    host = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    queues = models.JSONField(null=True, blank=True)  # None: every queue
    concurrency = models.PositiveIntegerField()
    # The lease this worker's jobs hold: a heartbeat older than that means it is dead.
    lease_seconds = models.FloatField()
    started_at = models.DateTimeField()
    heartbeat_at = models.DateTimeField()
    jobs_running = models.PositiveIntegerField(db_default=0)
    jobs_done = models.PositiveBigIntegerField(db_default=0)
    stopped_at = models.DateTimeField(null=True, blank=True)
    # How it ended: "stopped", or what its supervisor saw ("killed by SIGKILL", "exit status 1").
    exit = models.CharField(max_length=100, blank=True, db_default="")

    class Meta:
        db_table = "leasequeue_worker"
        verbose_name = _("worker")
        verbose_name_plural = _("workers")
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return self.id

    def state(self, now: datetime) -> WorkerState:
        if self.stopped_at is not None:
            return WorkerState.STOPPED if self.exit == "stopped" else WorkerState.DEAD
        if (now - self.heartbeat_at).total_seconds() > self.lease_seconds:
            return WorkerState.DEAD
        return WorkerState.ALIVE
