"""Turning a user's selection into jobs, within the per-user cap and without duplicates."""

from collections.abc import Iterable
from dataclasses import dataclass

from django.db import transaction

from django_leasequeue import JobStatus, QueueFull
from django_leasequeue.models import Job
from example_project.matching import limits
from example_project.matching.models import MatchRequest, Project
from example_project.matching.tasks import compute_match


def unique_key(user_id: int, project_id: int) -> str:
    """One unfinished match job per user and project: resubmitting returns the same job."""
    return f"match:{user_id}:{project_id}"


def unfinished_keys(user_id: int) -> set[str]:
    return set(
        Job.objects.filter(
            unique_key__startswith=f"match:{user_id}:", status__in=JobStatus.unfinished()
        ).values_list("unique_key", flat=True)
    )


@dataclass(frozen=True)
class Submission:
    created: int = 0
    already_running: int = 0
    refused_because: str = ""


def submit(user, projects: Iterable[Project]) -> Submission:
    """Enqueue one job per project not already in progress, all or none.

    The task's ``max_pending`` cap, per user, refuses a submission that would pass it with
    QueueFull, race-free (two tabs, a double click): the backend counts and inserts under the
    user's key lock. The jobs are signalled to the workers when the transaction commits.
    """
    projects = list(projects)
    capped = compute_match.using(max_pending=limits.max_unfinished_jobs())
    held = unfinished_keys(user.pk)
    already_running = sum(unique_key(user.pk, p.pk) in held for p in projects)
    # unique_key: a project whose job is unfinished gets that same job back, not a new one.
    calls = [
        (capped.using(unique_key=unique_key(user.pk, p.pk)), (user.pk, p.pk), {}) for p in projects
    ]
    with transaction.atomic():
        try:
            results = capped.get_backend().enqueue_many(calls)
        except QueueFull as full:
            return Submission(
                already_running=already_running,
                refused_because=(
                    f"You have {full.pending} unfinished job(s) and asked for "
                    f"{len(projects) - already_running} more; at most {full.cap} may be "
                    "unfinished at once. Wait for some to finish, or pick fewer projects."
                ),
            )
        for project, result in zip(projects, results, strict=True):
            MatchRequest.objects.get_or_create(user=user, project=project, job_id=result.id)
    return Submission(created=len(projects) - already_running, already_running=already_running)
