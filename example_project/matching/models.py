"""The demo's data: projects to match against, and which user asked for which job."""

from django.conf import settings
from django.db import models


class Project(models.Model):
    name = models.CharField(max_length=100, unique=True)
    summary = models.CharField(max_length=255)
    skills = models.JSONField(default=list, help_text="Skills the project needs.")
    # The demo's way to show a retry: the job for this project raises on its first attempt.
    fails_first_attempt = models.BooleanField(default=False)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class MatchRequest(models.Model):
    """Links a user to the job computing one project's match (the job row has no user)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    project = models.ForeignKey(Project, on_delete=models.CASCADE)
    job_id = models.UUIDField()
    requested_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-requested_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "job_id"], name="matching_one_request_per_job")
        ]

    def __str__(self) -> str:
        return f"{self.user} → {self.project} ({self.job_id})"


class ImportRun(models.Model):
    """Links a user to an import workflow they started (the workflow row has no user): who may
    see it, and how many of theirs are running (``import_runs.py``)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    workflow_id = models.UUIDField(unique=True)
    started_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"{self.user} → import {self.workflow_id}"
