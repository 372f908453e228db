"""A workflow's graph as inline SVG, drawn on the server: no script, no CDN.

Each step is a link to its job's admin page, drawn in its status's colour with the status's
symbol and its name (whole in its tooltip and its accessible name); an arrow goes from each
upstream step to the step after it, dashed while the step still waits for that one.
"""

from collections.abc import Callable
from uuid import UUID

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from django_leasequeue.admin.display import STATUS_SYMBOLS
from django_leasequeue.admin.workflow_layout import (
    NODE_HEIGHT,
    NODE_WIDTH,
    Arrow,
    Layout,
    PlacedStep,
)
from django_leasequeue.choices import JobStatus

# Characters of a step's name shown in its box (the whole name is in its tooltip).
NAME_CHARS = 22


def _shown(name: str) -> str:
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…"


def _arrow(arrow: Arrow) -> tuple[str, str]:
    """An arrow's class and path: a curve from the parent's right side to the child's left."""
    x1, y1 = arrow.parent.x + NODE_WIDTH, arrow.parent.y + NODE_HEIGHT / 2
    x2, y2 = arrow.child.x - 2, arrow.child.y + NODE_HEIGHT / 2
    middle = (x1 + x2) / 2
    path = f"M{x1:.1f},{y1:.1f} C{middle:.1f},{y1:.1f} {middle:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"
    return ("lq-arrow" if arrow.settled else "lq-arrow lq-arrow-waiting"), path


def _node(placed: PlacedStep, url: str) -> tuple:
    step = placed.step
    status = JobStatus(step.status)
    description = f"{step.name}: {status.label}"
    return (
        url,
        status.value,
        step.name,
        description,
        description,
        f"{placed.x:.1f}",
        f"{placed.y:.1f}",
        NODE_WIDTH,
        NODE_HEIGHT,
        f"{placed.x + 9:.1f}",
        f"{placed.y + NODE_HEIGHT / 2 + 5:.1f}",
        STATUS_SYMBOLS[status],
        _shown(step.name),
    )


def graph_svg(layout: Layout, step_url: Callable[[UUID], str], label: str) -> SafeString:
    """The graph; ``step_url`` gives each step's link, ``label`` names the graph."""
    arrows = format_html_join(
        "",
        '<path class="{}" d="{}" marker-end="url(#lq-arrowhead)"/>',
        (_arrow(arrow) for arrow in layout.arrows),
    )
    nodes = format_html_join(
        "",
        '<a href="{}" class="lq-node lq-node-{}" data-step="{}" aria-label="{}">'
        "<title>{}</title>"
        '<rect x="{}" y="{}" width="{}" height="{}" rx="5"/>'
        '<text x="{}" y="{}"><tspan aria-hidden="true">{}</tspan> {}</text></a>',
        (_node(placed, step_url(placed.step.id)) for placed in layout.steps),
    )
    return format_html(
        '<svg xmlns="http://www.w3.org/2000/svg" class="lq-graph" role="group" aria-label="{}"'
        ' width="{}" height="{}" viewBox="0 0 {} {}">'
        '<defs><marker id="lq-arrowhead" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="8"'
        ' markerHeight="8" orient="auto"><path d="M0,0 L8,4 L0,8 z"/></marker></defs>'
        '<g class="lq-arrows">{}</g><g class="lq-nodes">{}</g></svg>',
        label or _("Workflow graph"),
        width := f"{layout.width:.0f}",
        height := f"{layout.height:.0f}",
        width,
        height,
        arrows,
        nodes,
    )
