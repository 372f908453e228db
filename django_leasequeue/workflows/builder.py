"""Workflows built in code: ``Workflow.add`` for any dependency graph, and Celery's canvas
(``chain``, ``group``, ``chord``, with ``step`` specs) on top of it.

A ``Workflow`` is only a definition until ``enqueue()`` writes it, whole, in the caller's
transaction (``workflows.enqueue``). A step can only come after steps added before it, so a
cycle cannot be built: ``after=`` takes only the very ``Step`` objects this workflow's ``add()``
returned, so a step built by hand (whose index could point at itself, at a callback or at
nothing) or taken from another workflow is refused.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django_leasequeue.choices import RunIf, Upstream
from django_leasequeue.exceptions import InvalidWorkflow
from django_leasequeue.tasks_framework import Task

if TYPE_CHECKING:
    from django_leasequeue.workflows.handle import WorkflowHandle

# The run_if values a step may be given (the others are the callbacks').
STEP_RUN_IFS = (RunIf.SUCCEEDED, RunIf.FINISHED)
# A callback's step is named after its role; no other step may take these names.
CALLBACK_NAMES = frozenset(
    {RunIf.ON_SUCCESS.value, RunIf.ON_FAILURE.value, RunIf.ON_COMPLETE.value}
)


@dataclass(frozen=True, eq=False)
class Step:
    """A step of one workflow, as ``Workflow.add`` returns it: pass it in ``after=``. Only the
    object ``add()`` returned is accepted there (not an equal one built by hand)."""

    workflow: "Workflow" = field(repr=False)
    index: int
    name: str


@dataclass(frozen=True)
class StepSpec:
    """A task call not yet placed in a workflow (``step(task, *args, **kwargs)``)."""

    task: Task
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


def step(task: Task, *args: Any, **kwargs: Any) -> StepSpec:
    """A step spec for ``chain``, ``group`` and ``chord``: ``step(fetch_page, url)``."""
    if not isinstance(task, Task):
        raise InvalidWorkflow(f"A step runs a Task (a @task function), not {task!r}.")
    return StepSpec(task, tuple(args), dict(kwargs))


@dataclass(frozen=True)
class StepDefinition:
    """Everything ``enqueue`` writes for one step."""

    name: str
    task: Task
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    parents: tuple[int, ...]
    run_if: RunIf
    upstream: Upstream | None


class Workflow:
    """A graph of steps; ``enqueue()`` writes all of it in one transaction.

    ``name`` is shown in the admin. ``on_success``, ``on_failure`` and ``on_complete`` add a
    callback: a task run once, as the workflow's last step, when every other step has finished
    (and the workflow succeeded, failed, or either), unless the workflow was cancelled. Each
    callback's step is named after its role (``"on_failure"``), whatever its task."""

    def __init__(self, name: str = "") -> None:
        if not isinstance(name, str) or len(name) > 200:
            raise InvalidWorkflow("A workflow's name is a string of at most 200 characters.")
        self.name = name
        self.steps: list[StepDefinition] = []
        self.callbacks: list[StepDefinition] = []
        # The Step objects add() and the callbacks returned, by index: the only ones after=
        # takes.
        self._added: list[Step] = []
        self._callback_steps: list[Step] = []
        self._names: set[str] = set()
        # The last number given to each task name (fetch, fetch_2, ...): a group of 10,000
        # same-named steps is numbered in one pass, not by trying every number again.
        self._last_number: dict[str, int] = {}

    def add(
        self,
        task: Task,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        after: Iterable[Step] = (),
        run_if: str = RunIf.SUCCEEDED,
        name: str | None = None,
    ) -> Step:
        """Add a step running ``task(*args, **kwargs)`` once every step in ``after`` has
        finished: only if they all succeeded (``run_if="succeeded"``), or whatever their
        outcome (``run_if="finished"``)."""
        if run_if not in STEP_RUN_IFS:
            choices = ", ".join(repr(choice.value) for choice in STEP_RUN_IFS)
            raise InvalidWorkflow(f"run_if must be one of {choices}, not {run_if!r}.")
        parents = self._parents(after)
        return self._add(task, args, kwargs or {}, parents, RunIf(run_if), None, name)

    def on_success(self, task: Task, args: Sequence[Any] = (), kwargs: Any = None) -> Step:
        """Run ``task`` once every step succeeded (the step ``"on_success"``)."""
        return self._callback(task, args, kwargs, RunIf.ON_SUCCESS)

    def on_failure(self, task: Task, args: Sequence[Any] = (), kwargs: Any = None) -> Step:
        """Run ``task`` once every step has finished, if any failed or was cancelled on its
        own (the step ``"on_failure"``). Cancelling the workflow cancels it instead."""
        return self._callback(task, args, kwargs, RunIf.ON_FAILURE)

    def on_complete(self, task: Task, args: Sequence[Any] = (), kwargs: Any = None) -> Step:
        """Run ``task`` once every step has finished, whatever the outcome (the step
        ``"on_complete"``). Cancelling the workflow cancels it instead."""
        return self._callback(task, args, kwargs, RunIf.ON_COMPLETE)

    def enqueue(self) -> "WorkflowHandle":
        """Write the workflow in the caller's transaction; roots are woken on commit."""
        from django_leasequeue.workflows.enqueue import enqueue_workflow

        return enqueue_workflow(self)

    async def aenqueue(self) -> "WorkflowHandle":
        from asgiref.sync import sync_to_async

        return await sync_to_async(self.enqueue)()

    # Building blocks of the canvas functions

    def sinks(self) -> list[Step]:
        """The steps no other step comes after (where a chain goes on from)."""
        has_children = {parent for definition in self.steps for parent in definition.parents}
        return [step for step in self._added if step.index not in has_children]

    def roots(self) -> list[int]:
        return [index for index, definition in enumerate(self.steps) if not definition.parents]

    def merge(
        self, other: "Workflow", after: Sequence[Step] = (), upstream: Upstream | None = None
    ) -> list[Step]:
        """Copy ``other``'s steps in, its roots coming after ``after`` (receiving their results
        as ``upstream`` says); returns the copied steps' sinks."""
        if other.callbacks:
            raise InvalidWorkflow("A workflow with callbacks cannot be part of another one.")
        roots_after = self._parents(after)
        offset = len(self.steps)
        for definition in other.steps:
            parents = tuple(offset + parent for parent in definition.parents)
            root = not definition.parents
            self._add(
                definition.task,
                definition.args,
                definition.kwargs,
                roots_after if root else parents,
                definition.run_if,
                upstream if root and after else definition.upstream,
                None,
            )
        return [self._added[offset + step.index] for step in other.sinks()]

    # Internals

    def _parents(self, after: Iterable[Step]) -> tuple[int, ...]:
        if isinstance(after, Step):
            after = [after]
        parents: list[int] = []
        for parent in after:
            if not isinstance(parent, Step):
                raise InvalidWorkflow(
                    f"after= lists Steps (what Workflow.add returns), not {parent!r}."
                )
            if parent.workflow is not self:
                raise InvalidWorkflow(
                    f"Step {parent.name!r} belongs to another workflow: after= takes the Steps "
                    "that this workflow's add() returned."
                )
            if any(parent is callback for callback in self._callback_steps):
                raise InvalidWorkflow(
                    f"Step {parent.name!r} is a callback: nothing comes after it."
                )
            if not (0 <= parent.index < len(self._added) and self._added[parent.index] is parent):
                raise InvalidWorkflow(
                    f"Step {parent.name!r} (index {parent.index!r}) was not returned by this "
                    "workflow's add(): after= takes the Steps that add() returned, not Steps "
                    "built by hand."
                )
            if parent.index not in parents:
                parents.append(parent.index)
        return tuple(parents)

    def _callback(
        self, task: Task, args: Sequence[Any], kwargs: Mapping[str, Any] | None, run_if: RunIf
    ) -> Step:
        if any(callback.run_if == run_if for callback in self.callbacks):
            raise InvalidWorkflow(f"This workflow already has an {run_if.value} callback.")
        kwargs = kwargs or {}
        self._check(task, args, kwargs, run_if.value)
        definition = StepDefinition(run_if.value, task, tuple(args), dict(kwargs), (), run_if, None)
        self.callbacks.append(definition)
        callback = Step(self, len(self.steps) + len(self.callbacks) - 1, definition.name)
        self._callback_steps.append(callback)
        return callback

    def _add(
        self,
        task: Task,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        parents: tuple[int, ...],
        run_if: RunIf,
        upstream: Upstream | None,
        name: str | None,
    ) -> Step:
        if self.callbacks:
            raise InvalidWorkflow("Add the steps first, then the callbacks.")
        self._check(task, args, kwargs, name)
        definition = StepDefinition(
            self._unique_name(task, name),
            task,
            tuple(args),
            dict(kwargs),
            parents,
            run_if,
            upstream,
        )
        self.steps.append(definition)
        added = Step(self, len(self.steps) - 1, definition.name)
        self._added.append(added)
        return added

    @staticmethod
    def _check(
        task: Task, args: Sequence[Any], kwargs: Mapping[str, Any], name: str | None
    ) -> None:
        if not isinstance(task, Task):
            raise InvalidWorkflow(f"A step runs a Task (a @task function), not {task!r}.")
        if isinstance(args, str | bytes) or not isinstance(args, Sequence):
            raise InvalidWorkflow(f"args of step {name or task.name!r} is a list or tuple.")
        if not isinstance(kwargs, Mapping):
            raise InvalidWorkflow(f"kwargs of step {name or task.name!r} is a dict.")

    def _unique_name(self, task: Task, name: str | None) -> str:
        """The given name (refused when taken, or a callback's), else the task's name, numbered
        when it repeats or is a callback's."""
        if name is not None:
            if not isinstance(name, str) or not name or len(name) > 200:
                raise InvalidWorkflow(
                    "A step's name is a non-empty string of at most 200 characters."
                )
            if name in CALLBACK_NAMES:
                raise InvalidWorkflow(
                    f"A step cannot be named {name!r}: that is the name of the workflow's "
                    f"{name} callback."
                )
            if name in self._names:
                raise InvalidWorkflow(f"Two steps are named {name!r}: step names are unique.")
            chosen = name
        else:
            base = task.name
            number = self._last_number.get(base, 0)
            chosen = ""
            while not chosen or chosen in self._names or chosen in CALLBACK_NAMES:
                number += 1
                chosen = base if number == 1 else f"{base}_{number}"
            self._last_number[base] = number
        self._names.add(chosen)
        return chosen


# Celery's canvas, each returning a Workflow


def _as_workflow(part: "StepSpec | Workflow | Task") -> Workflow:
    if isinstance(part, Workflow):
        return part
    if isinstance(part, Task):
        part = StepSpec(part)
    if not isinstance(part, StepSpec):
        raise InvalidWorkflow(f"A canvas takes step(...) specs or workflows, not {part!r}.")
    single = Workflow()
    single.add(part.task, part.args, part.kwargs)
    return single


def chain(*parts: "StepSpec | Workflow | Task") -> Workflow:
    """Each part runs after the previous one, given its return value as its first argument
    (after a group: the list of the group's return values, in order)."""
    if not parts:
        raise InvalidWorkflow("chain() needs at least one step.")
    workflow = Workflow()
    sinks: list[Step] = []
    for part in parts:
        upstream = None if not sinks else Upstream.CHAIN if len(sinks) == 1 else Upstream.CHORD
        sinks = workflow.merge(_as_workflow(part), sinks, upstream)
    return workflow


def group(*parts: "StepSpec | Workflow | Task") -> Workflow:
    """The parts run side by side."""
    if not parts:
        raise InvalidWorkflow("group() needs at least one step.")
    workflow = Workflow()
    for part in parts:
        workflow.merge(_as_workflow(part))
    return workflow


def chord(header: "Workflow | Iterable[StepSpec]", callback: "StepSpec | Task") -> Workflow:
    """``callback`` runs once every step of ``header`` (a group) succeeded, given the list of
    their return values, in order, as its first argument."""
    if not isinstance(header, Workflow):
        header = group(*header)
    workflow = Workflow()
    sinks = workflow.merge(header)
    workflow.merge(_as_workflow(callback), sinks, Upstream.CHORD)
    return workflow
