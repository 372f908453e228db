"""The workflow graph's layout: layers by depth, rows untangled, callbacks hung off the sinks."""

import uuid

from django_leasequeue.admin.workflow_layout import (
    LAYER_GAP,
    MARGIN,
    NODE_HEIGHT,
    NODE_WIDTH,
    ROW_GAP,
    Dependency,
    GraphStep,
    layout,
    natural_key,
)


def _steps(*names: str, callbacks: tuple[str, ...] = ()) -> dict[str, GraphStep]:
    return {
        name: GraphStep(uuid.uuid4(), name, "waiting", callback=name in callbacks)
        for name in [*names, *callbacks]
    }


def _edges(steps: dict[str, GraphStep], *pairs: str) -> list[Dependency]:
    return [
        Dependency(steps[p].id, steps[c].id, settled=False)
        for pair in pairs
        for p, c in [pair.split(">")]
    ]


def _places(result) -> dict[str, tuple[int, int]]:
    return {placed.step.name: (placed.layer, placed.row) for placed in result.steps}


def test_a_chord_is_three_layers_with_the_merge_centred_on_its_group():
    steps = _steps("fetch", "fetch_2", "fetch_3", "merge", "report")
    edges = _edges(steps, "fetch>merge", "fetch_2>merge", "fetch_3>merge", "merge>report")
    result = layout(list(steps.values()), edges)
    assert _places(result) == {
        "fetch": (0, 0),
        "fetch_2": (0, 1),
        "fetch_3": (0, 2),
        "merge": (1, 0),
        "report": (2, 0),
    }
    merge = next(p for p in result.steps if p.step.name == "merge")
    fetch_2 = next(p for p in result.steps if p.step.name == "fetch_2")
    assert merge.y == fetch_2.y  # centred on the tallest layer
    assert merge.x == MARGIN + NODE_WIDTH + LAYER_GAP
    assert result.width == 2 * MARGIN + 3 * NODE_WIDTH + 2 * LAYER_GAP
    assert result.height == 2 * MARGIN + 3 * NODE_HEIGHT + 2 * ROW_GAP
    assert len(result.arrows) == 4
    assert [s.name for s in result.upstream[steps["merge"].id]] == ["fetch", "fetch_2", "fetch_3"]


def test_a_step_goes_one_layer_past_its_deepest_upstream_step():
    steps = _steps("a", "b", "c", "d")
    result = layout(list(steps.values()), _edges(steps, "a>b", "b>c", "a>d", "c>d"))
    assert {name: layer for name, (layer, _row) in _places(result).items()} == {
        "a": 0,
        "b": 1,
        "c": 2,
        "d": 3,
    }


def test_rows_follow_their_upstream_steps_so_parallel_chains_do_not_cross():
    # Two chains whose second steps' names sort the other way round.
    steps = _steps("a1", "b1", "z_after_a", "y_after_b")
    result = layout(list(steps.values()), _edges(steps, "a1>z_after_a", "b1>y_after_b"))
    places = _places(result)
    assert places["z_after_a"][1] == places["a1"][1] == 0
    assert places["y_after_b"][1] == places["b1"][1] == 1


def test_a_callback_is_drawn_after_the_sinks_only():
    steps = _steps("a", "b", "c", callbacks=("report",))
    edges = _edges(steps, "a>b", "a>report", "b>report", "c>report")
    result = layout(list(steps.values()), edges)
    drawn = {(a.parent.step.name, a.child.step.name) for a in result.arrows}
    assert drawn == {("a", "b"), ("b", "report"), ("c", "report")}
    assert _places(result)["report"][0] == 2
    # The table still lists every dependency.
    assert {s.name for s in result.upstream[steps["report"].id]} == {"a", "b", "c"}


def test_an_arrow_remembers_whether_its_step_still_waits_for_that_one():
    steps = _steps("a", "b", "c")
    edges = [
        Dependency(steps["a"].id, steps["c"].id, settled=True),
        Dependency(steps["b"].id, steps["c"].id, settled=False),
    ]
    result = layout(list(steps.values()), edges)
    assert {a.parent.step.name: a.settled for a in result.arrows} == {"a": True, "b": False}


def test_names_sort_naturally_and_an_empty_graph_has_no_size():
    assert sorted(["fetch_10", "fetch_2", "fetch"], key=natural_key) == [
        "fetch",
        "fetch_2",
        "fetch_10",
    ]
    empty = layout([], [])
    assert (empty.steps, empty.arrows) == ([], [])
    assert (empty.width, empty.height) == (2 * MARGIN, 2 * MARGIN)
