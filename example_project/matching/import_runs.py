"""Starting a user's import within the per-user cap on imports running at once.

Without it, one signed-in user could start workflows as fast as they can post (30 workflows,
150 jobs in under a second). The user's row is locked while counting, so two quick posts (a
double click, two tabs, a script) are counted one after the other and cannot both pass the cap;
the workflow and the row linking it to the user commit together.
"""

from dataclasses import dataclass
from uuid import UUID

from django.contrib.auth import get_user_model
from django.db import transaction

from django_leasequeue import WorkflowStatus
from django_leasequeue.models import WorkflowRun
from example_project.matching import limits
from example_project.matching.imports import start_import
from example_project.matching.models import ImportRun


@dataclass(frozen=True)
class ImportStart:
    workflow_id: UUID | None = None
    refused_because: str = ""


def running_imports(user) -> int:
    """How many of the user's imports are still running."""
    theirs = ImportRun.objects.filter(user=user).values("workflow_id")
    return WorkflowRun.objects.filter(pk__in=theirs, status=WorkflowStatus.RUNNING).count()


def start_for(user) -> ImportStart:
    """Enqueue an import for ``user``, or say why not (the cap is reached)."""
    cap = limits.max_running_imports()
    with transaction.atomic():
        get_user_model().objects.select_for_update().get(pk=user.pk)
        running = running_imports(user)
        if running >= cap:
            return ImportStart(
                refused_because=(
                    f"You have {running} import(s) running; at most {cap} may run at once. "
                    "Wait for one to finish, then start another."
                )
            )
        handle = start_import()
        ImportRun.objects.create(user=user, workflow_id=handle.id)
    return ImportStart(workflow_id=UUID(handle.id))
