"""A business table, written by tasks inside fenced transactions."""

from django.db import models


class Receipt(models.Model):
    job_id = models.UUIDField()
    written_by = models.CharField(max_length=100)

    def __str__(self) -> str:
        return f"receipt of {self.job_id} by {self.written_by}"
