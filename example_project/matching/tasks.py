"""The demo's job: score how well a user matches a project, a step at a time.

Each step stands for a slow call to another service (``await asyncio.sleep``). The job reports
progress after every step, saves a checkpoint half way, and a retry resumes from that
checkpoint instead of starting over.
"""

import asyncio
import hashlib
import logging
from typing import Any

from django.conf import settings

from django_leasequeue import JobContext, task
from example_project.matching import request_ids
from example_project.matching.models import Project

logger = logging.getLogger(__name__)

STEPS = 10
CHECKPOINT_STEP = STEPS // 2
MESSAGES = [
    "Fetching your profile",
    "Fetching the project",
    "Comparing skills",
    "Comparing availability",
    "Checking past projects",
    "Asking the team service",
    "Weighing time zones",
    "Reading reviews",
    "Combining the scores",
    "Done",
]


class TeamServiceUnavailable(Exception):
    """The simulated outage that makes one project's first attempt fail."""


def step_seconds() -> float:
    return float(getattr(settings, "MATCHING_STEP_SECONDS", 0.5))


def step_points(user_id: int, project: Project, step: int) -> float:
    """Up to 10 points per step, the same for the same user, project and step."""
    digest = hashlib.sha256(f"{user_id}:{project.pk}:{step}".encode()).digest()
    return 4 + digest[0] % 7  # 4..10: everybody matches a little


@task(
    takes_context=True,
    max_attempts=3,
    backoff_seconds=1,
    timeout=120,
    # At most this many unfinished jobs per user (submit() sets the cap from settings).
    max_pending=5,
    max_pending_key=lambda user_id, project_id: f"user:{user_id}",
)
async def compute_match(context: JobContext, user_id: int, project_id: int) -> dict[str, Any]:
    project = await Project.objects.aget(pk=project_id)
    # The request that submitted the job, made current by RequestIdHook (request_ids.py).
    logger.info(
        "Matching user %s with %s (attempt %d, request %s).",
        user_id,
        project.name,
        context.attempt,
        request_ids.current(),
    )
    saved = context.last_checkpoint or {}
    step, score = saved.get("step", 0), saved.get("score", 0.0)
    resumed_from = step or None
    while step < STEPS:
        await asyncio.sleep(step_seconds())  # the slow call this step stands for
        score += step_points(user_id, project, step)
        step += 1
        await context.aprogress(step, STEPS, MESSAGES[step - 1])
        if step == CHECKPOINT_STEP:
            # Saved under the lease: only the current holder can write it; a retry reads it.
            await context.acheckpoint({"step": step, "score": score})
            if project.fails_first_attempt and context.attempt == 1:
                raise TeamServiceUnavailable(
                    f"The team service timed out for {project.name} (this demo project always "
                    "fails its first attempt; the retry resumes from the checkpoint)."
                )
    return {
        "project": project.name,
        "score": round(score),
        "attempt": context.attempt,
        "resumed_from_step": resumed_from,
    }
