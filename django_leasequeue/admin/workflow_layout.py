"""Where each step of a workflow's graph goes: layered left to right by depth.

A step's layer is one more than its deepest upstream step's (the roots are layer 0), so every
arrow points right. Within a layer, steps are ordered by the mean row of their upstream steps
(one barycentre pass: enough to keep chains straight and fan-ins next to their fan-outs), then
by name. A callback comes after every other step: only its arrows from the steps nothing else
comes after are drawn, the others being implied by them.

Pure: steps and dependencies in, coordinates out (``workflow_graph`` draws them).
"""

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from uuid import UUID

NODE_WIDTH = 176
NODE_HEIGHT = 34
LAYER_GAP = 56
ROW_GAP = 14
MARGIN = 8


@dataclass(frozen=True, slots=True)
class GraphStep:
    id: UUID
    name: str
    status: str
    # A workflow callback (on_success, on_failure, on_complete).
    callback: bool = False


@dataclass(frozen=True, slots=True)
class Dependency:
    parent: UUID
    child: UUID
    # Whether the parent's outcome is recorded (the child no longer waits for it).
    settled: bool


@dataclass(frozen=True, slots=True)
class PlacedStep:
    step: GraphStep
    layer: int
    row: int
    x: float
    y: float


@dataclass(frozen=True, slots=True)
class Arrow:
    parent: PlacedStep
    child: PlacedStep
    settled: bool


@dataclass(frozen=True, slots=True)
class Layout:
    steps: list[PlacedStep]  # layer by layer, top to bottom
    arrows: list[Arrow]
    width: float
    height: float
    # The upstream steps of each step, in the order of its dependencies.
    upstream: dict[UUID, list[GraphStep]]


def natural_key(name: str) -> list[int | str]:
    """Sorts "fetch_2" before "fetch_10"."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def layout(steps: Sequence[GraphStep], dependencies: Iterable[Dependency]) -> Layout:
    by_id = {step.id: step for step in steps}
    edges = [d for d in dependencies if d.parent in by_id and d.child in by_id]
    parents: dict[UUID, list[UUID]] = defaultdict(list)
    children: dict[UUID, list[UUID]] = defaultdict(list)
    for edge in edges:
        parents[edge.child].append(edge.parent)
        children[edge.parent].append(edge.child)
    layers = _layers(steps, parents, children)
    rows: dict[UUID, int] = {}
    columns: list[list[GraphStep]] = []
    for members in layers:
        members.sort(key=lambda step: (_mean_row(parents[step.id], rows), natural_key(step.name)))
        rows.update({step.id: row for row, step in enumerate(members)})
        columns.append(members)
    tallest = max((len(column) for column in columns), default=0)
    placed: dict[UUID, PlacedStep] = {}
    for layer, column in enumerate(columns):
        offset = (tallest - len(column)) / 2  # each layer centred on the tallest one
        for row, step in enumerate(column):
            placed[step.id] = PlacedStep(
                step,
                layer,
                row,
                MARGIN + layer * (NODE_WIDTH + LAYER_GAP),
                MARGIN + (row + offset) * (NODE_HEIGHT + ROW_GAP),
            )
    arrows = [
        Arrow(placed[edge.parent], placed[edge.child], edge.settled)
        for edge in edges
        if not (by_id[edge.child].callback and _has_step_children(edge.parent, children, by_id))
    ]
    return Layout(
        steps=[placed[step.id] for column in columns for step in column],
        arrows=arrows,
        width=2 * MARGIN + len(columns) * (NODE_WIDTH + LAYER_GAP) - LAYER_GAP * bool(columns),
        height=2 * MARGIN + tallest * (NODE_HEIGHT + ROW_GAP) - ROW_GAP * bool(tallest),
        upstream={step.id: [by_id[p] for p in parents[step.id]] for step in steps},
    )


def _layers(
    steps: Sequence[GraphStep],
    parents: dict[UUID, list[UUID]],
    children: dict[UUID, list[UUID]],
) -> list[list[GraphStep]]:
    """Each step's depth, by a topological walk (Kahn's): a step is placed once all its
    upstream steps are."""
    waiting = {step.id: len(parents[step.id]) for step in steps}
    depth = dict.fromkeys(waiting, 0)
    ready = [step.id for step in steps if not waiting[step.id]]
    while ready:
        step_id = ready.pop()
        for child in children[step_id]:
            depth[child] = max(depth[child], depth[step_id] + 1)
            waiting[child] -= 1
            if not waiting[child]:
                ready.append(child)
    layers: list[list[GraphStep]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for step in steps:
        layers[depth[step.id]].append(step)
    return layers


def _mean_row(step_parents: list[UUID], rows: dict[UUID, int]) -> float:
    return sum(rows[p] for p in step_parents) / len(step_parents) if step_parents else 0.0


def _has_step_children(
    step_id: UUID, children: dict[UUID, list[UUID]], by_id: dict[UUID, GraphStep]
) -> bool:
    """Whether a step other than a callback comes after this one."""
    return any(not by_id[child].callback for child in children[step_id])
