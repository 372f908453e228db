"""Turning a user's selection into jobs, within the per-user cap and without duplicates."""

from collections.abc import Iterable
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction

from django_leasequeue import JobStatus
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
    """Enqueue one job per project not already in progress, unless it would pass the cap.

    The user's row is locked so that two submissions of one user (two tabs, a double click)
    count unfinished jobs one after the other. The jobs are inserted in this transaction and
    signalled to the workers when it commits.
    """
    cap = limits.max_unfinished_jobs()
    with transaction.atomic():
        get_user_model().objects.select_for_update().get(pk=user.pk)
        held = unfinished_keys(user.pk)
        projects = list(projects)
        new = [p for p in projects if unique_key(user.pk, p.pk) not in held]
        if len(held) + len(new) > cap:
            return Submission(
                already_running=len(projects) - len(new),
                refused_because=(
                    f"You have {len(held)} unfinished job(s) and asked for {len(new)} more; "
                    f"at most {cap} may be unfinished at once. Wait for some to finish, "
                    "or pick fewer projects."
                ),
            )
        for project in projects:
            # unique_key: a project whose job is unfinished gets that same job back, not a new one.
            result = compute_match.using(unique_key=unique_key(user.pk, project.pk)).enqueue(
                user.pk, project.pk
            )
            MatchRequest.objects.get_or_create(user=user, project=project, job_id=result.id)
        return Submission(created=len(new), already_running=len(projects) - len(new))
