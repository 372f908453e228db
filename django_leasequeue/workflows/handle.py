"""``WorkflowHandle``: an enqueued workflow as its caller sees it (what ``Workflow.enqueue()``
returns, or ``WorkflowHandle.load(id)``): its status, its steps' results, cancel."""

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING
from uuid import UUID

from asgiref.sync import sync_to_async

from django_leasequeue.choices import WorkflowStatus
from django_leasequeue.results import result_from_row
from django_leasequeue.sql import reads as reads_sql
from django_leasequeue.sql.executor import execute
from django_leasequeue.tasks_framework import TaskResult, task_backends

if TYPE_CHECKING:
    from django_leasequeue.backend import LeaseQueueBackend


class WorkflowHandle:
    """``id``, ``name`` and ``status`` (a ``WorkflowStatus``) as last read; ``steps`` maps each
    step's name to its ``TaskResult`` (as enqueued, then as ``refresh()`` last read it), and
    ``step_ids`` each step's name to its job id."""

    def __init__(
        self,
        workflow_id: str | UUID,
        *,
        backend_alias: str,
        name: str,
        status_value: str,
        created_at: datetime,
        step_ids: Mapping[str, str] | None = None,
        finished_at: datetime | None = None,
        steps: Mapping[str, TaskResult] | None = None,
    ) -> None:
        self.id = str(workflow_id)
        self.backend = backend_alias
        self.name = name
        self.status = WorkflowStatus(status_value)
        self.created_at = created_at
        self.finished_at = finished_at
        self.step_ids = dict(step_ids or {})
        self.steps: Mapping[str, TaskResult] = steps if steps is not None else {}

    def __repr__(self) -> str:
        return f"<WorkflowHandle {self.name or self.id} {self.status.value}>"

    @classmethod
    def load(cls, workflow_id: str | UUID, backend: str = "default") -> "WorkflowHandle":
        """The handle of an enqueued workflow, read now (``WorkflowRun.DoesNotExist`` if gone)."""
        handle = cls(
            workflow_id,
            backend_alias=backend,
            name="",
            status_value="running",
            created_at=None,  # type: ignore[arg-type]  # read below
        )
        handle.refresh()
        return handle

    @property
    def finished(self) -> bool:
        return self.status != WorkflowStatus.RUNNING

    def refresh(self) -> None:
        """Read the workflow's status and every step's result again."""
        from django_leasequeue.models import WorkflowRun

        database = self._backend().config.database
        row = WorkflowRun.objects.using(database).get(pk=self.id)
        self.name, self.status = row.name, WorkflowStatus(row.status)
        self.created_at, self.finished_at = row.created_at, row.finished_at
        steps = row.steps.using(database).values_list("step_name", "id").order_by("id")
        self.step_ids = {str(name): str(job_id) for name, job_id in steps}
        by_id = {
            str(result_row["id"]): result_from_row(result_row)
            for result_row in execute(
                reads_sql.job_results([UUID(job_id) for job_id in self.step_ids.values()]), database
            )
        }
        self.steps = {name: by_id[job_id] for name, job_id in self.step_ids.items()}

    async def arefresh(self) -> None:
        await sync_to_async(self.refresh)()

    def cancel(self) -> dict[str, int]:
        """Cancel the steps not started, callbacks included (none runs), ask the running ones
        to stop; the workflow ends CANCELLED once they have. Returns how many steps were
        cancelled and asked to stop. (Cancelling one step instead, ``backend.cancel``, is that
        step's outcome: the callbacks run as after a failure; docs/workflows.md.)"""
        from django_leasequeue.operations import cancel_workflow

        return cancel_workflow(self.id, self._backend().config.database)

    async def acancel(self) -> dict[str, int]:
        return await sync_to_async(self.cancel)()

    def _backend(self) -> "LeaseQueueBackend":
        return task_backends[self.backend]  # type: ignore[return-value]  # workflows: ours only
