"""A business table, written by tasks inside fenced transactions."""

from django.db import models


class Receipt(models.Model):
    job_id = models.UUIDField()
    written_by = models.CharField(max_length=100)

    def __str__(self) -> str:
        return f"receipt of {self.job_id} by {self.written_by}"


class Execution(models.Model):
    """One run (attempt) of a crash-test job, written when it starts, before any crash."""

    job_id = models.UUIDField(db_index=True)
    pid = models.IntegerField()
    attempt = models.IntegerField()

    def __str__(self) -> str:
        return f"attempt {self.attempt} of {self.job_id} in {self.pid}"


class TickRun(models.Model):
    """One run of a periodic-job test task, with its tick and its own start and end times."""

    task_name = models.CharField(max_length=100)
    job_id = models.UUIDField()
    scheduled_at = models.DateTimeField()
    pid = models.IntegerField()
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.task_name} tick {self.scheduled_at:%H:%M:%S} by {self.pid}"


class StepRun(models.Model):
    """One committed run of a workflow-test step: written in the fenced transaction that
    completes it, with the times the task itself saw."""

    job_id = models.UUIDField(db_index=True)
    pid = models.IntegerField()
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"run of {self.job_id} by {self.pid}"
