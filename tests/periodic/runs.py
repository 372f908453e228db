"""What the periodic-jobs test tasks record."""

import os
import time

from django.utils import timezone

from tests.support.models import TickRun


def record_run(name: str, context, scheduled_at, seconds: float = 0.0) -> None:
    """Record a run with its own start and end times (after working ``seconds``)."""
    started_at = timezone.now()
    time.sleep(seconds)
    TickRun.objects.create(
        task_name=name,
        job_id=context.job_id,
        scheduled_at=scheduled_at,
        pid=os.getpid(),
        started_at=started_at,
        finished_at=timezone.now(),
    )
