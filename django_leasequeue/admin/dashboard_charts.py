"""The dashboard's charts as inline SVG, drawn on the server: readable without JavaScript, no
CDN. Every interval is a point with a ``<title>`` that gives its values (a tooltip, and what a
screen reader reads); colours only repeat what the legend's labels say, and a line's pattern
(solid p50, dashed p95) tells the two percentiles apart without them.

A week's page draws thousands of points: the SVG is written as plain strings, every text in it
escaped once (the standard library's ``html.escape``, several times faster than Django's),
rather than through a template or ``format_html`` per element.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from html import escape

from django.utils import formats, timezone
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from django_leasequeue.history.series import Point, QueueSeries, Window

WIDTH = 640
HEIGHT = 150
LEFT = 56  # the y axis' labels
BOTTOM = 20  # the x axis' labels
TOP = 8


@dataclass(frozen=True, slots=True)
class Line:
    """One series of a chart: its label (in the legend), CSS class, and values."""

    label: str
    css_class: str
    values: Sequence[float | None]


@dataclass(frozen=True, slots=True)
class Chart:
    title: str
    svg: SafeString
    legend: Sequence[Line]


def interval_times(window: Window, starts: Sequence[datetime]) -> list[str]:
    """Each interval's start as the tooltips and axis show it, in the current time zone."""
    shape = "D H:i" if window.seconds >= 3600 else "H:i"
    return [formats.date_format(timezone.localtime(start), shape) for start in starts]


def queue_charts(series: QueueSeries, window: Window, when: Sequence[str]) -> list[Chart]:
    """A queue's four charts: jobs finished, backlog, pickup latency, run time. ``when``:
    ``interval_times`` of the series' points."""
    points = series.points
    succeeded = Line(_("succeeded"), "lq-succeeded", [p.succeeded for p in points])
    failed = Line(_("failed"), "lq-failed", [p.failed for p in points])
    backlog = Line(_("due, not started"), "lq-backlog", [p.backlog for p in points])
    pickup = [
        Line("p50", "lq-p50", [p.pickup_p50 for p in points]),
        Line("p95", "lq-p95", [p.pickup_p95 for p in points]),
    ]
    run = [
        Line("p50", "lq-p50", [p.run_p50 for p in points]),
        Line("p95", "lq-p95", [p.run_p95 for p in points]),
    ]
    finished_title = _("%(when)s: %(succeeded)s succeeded, %(failed)s failed")
    interval = {60: _("minute"), 900: _("15 minutes"), 3600: _("hour")}[window.seconds]
    return [
        Chart(
            _("Jobs finished per %(interval)s") % {"interval": interval},
            _bars(
                series.queue_name,
                [succeeded, failed],
                [
                    finished_title % {"when": t, "succeeded": p.succeeded, "failed": p.failed}
                    for t, p in zip(when, points, strict=True)
                ],
                when,
            ),
            [succeeded, failed],
        ),
        Chart(
            _("Backlog"),
            _bars(
                series.queue_name,
                [backlog],
                _backlog_titles(when, points),
                when,
                estimated=[p.backlog_estimated for p in points],
            ),
            [backlog],
        ),
        Chart(
            _("Pickup latency (due → claimed)"),
            _lines(series.queue_name, pickup, _latency_titles(when, pickup), when),
            pickup,
        ),
        Chart(
            _("Run time (last attempt)"),
            _lines(series.queue_name, run, _latency_titles(when, run), when),
            run,
        ),
    ]


def _backlog_titles(when: Sequence[str], points: Sequence[Point]) -> list[str]:
    unmeasured = _("%(when)s: backlog not measured (no worker ran)")
    estimated = _("%(when)s: about %(count)s due, not started (estimated)")
    exact = _("%(when)s: %(count)s due, not started")
    titles = []
    for t, point in zip(when, points, strict=True):
        if point.backlog is None:
            titles.append(unmeasured % {"when": t})
        else:
            shape = estimated if point.backlog_estimated else exact
            titles.append(shape % {"when": t, "count": f"{point.backlog:,}"})
    return titles


def _latency_titles(when: Sequence[str], lines: Sequence[Line]) -> list[str]:
    p50, p95 = lines
    nothing = _("%(when)s: nothing")
    both = _("%(when)s: p50 %(p50)s, p95 %(p95)s")
    return [
        nothing % {"when": t}
        if low is None
        else both % {"when": t, "p50": milliseconds(low), "p95": milliseconds(high)}
        for t, low, high in zip(when, p50.values, p95.values, strict=True)
    ]


def milliseconds(value: float | None) -> str:
    """A latency as a person reads it: ms below a second, s above."""
    if value is None:
        return "-"
    if value >= 1000:
        return f"{value / 1000:.3g} s"
    return f"{value:.3g} ms"


def _scale_top(values: Sequence[float]) -> float:
    """A round top for the y axis: 1, 2 or 5 times a power of ten, at least the largest value."""
    largest = max(values, default=0)
    if largest <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(largest))
    for step in (1, 2, 5):
        if largest <= step * power:
            return float(step * power)
    return float(10 * power)


def _frame(label: str, top_label: str, when: Sequence[str], body: str) -> SafeString:
    """The SVG around a chart's marks: its axes and their labels."""
    bottom = HEIGHT - BOTTOM
    return mark_safe(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="lq-chart-svg" role="group"'
        f' aria-label="{escape(label)}" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}"'
        f' height="{HEIGHT}">'
        f'<line class="lq-axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}"/>'
        f'<line class="lq-axis" x1="{LEFT}" y1="{bottom}" x2="{WIDTH}" y2="{bottom}"/>'
        f'<text class="lq-axis-label" x="{LEFT - 4}" y="{TOP + 8}" text-anchor="end">'
        f"{escape(top_label)}</text>"
        f'<text class="lq-axis-label" x="{LEFT - 4}" y="{bottom}" text-anchor="end">0</text>'
        f'<text class="lq-axis-label" x="{LEFT}" y="{HEIGHT - 4}">{escape(when[0])}</text>'
        f'<text class="lq-axis-label" x="{WIDTH}" y="{HEIGHT - 4}" text-anchor="end">'
        f"{escape(when[-1])}</text>{body}</svg>"
    )


def _slot(index: int, count: int) -> tuple[float, float]:
    """The x and width of a point's slot."""
    width = (WIDTH - LEFT) / count
    return LEFT + index * width, width


def _y(value: float, top: float) -> float:
    return HEIGHT - BOTTOM - (HEIGHT - BOTTOM - TOP) * value / top


def _hits(titles: Sequence[str]) -> str:
    """A transparent column per point, the height of the chart, holding its title."""
    count = len(titles)
    height = HEIGHT - BOTTOM - TOP
    columns = []
    for index, title in enumerate(titles):
        x, width = _slot(index, count)
        columns.append(
            f'<rect class="lq-point" x="{x:.1f}" y="{TOP}" width="{width:.1f}"'
            f' height="{height}"><title>{escape(title)}</title></rect>'
        )
    return "".join(columns)


def _bars(
    queue: str,
    stacked: Sequence[Line],
    titles: Sequence[str],
    when: Sequence[str],
    estimated: Sequence[bool] | None = None,
) -> SafeString:
    """Bars, one stack per point (the lines' values on top of each other)."""
    count = len(titles)
    totals = [sum(line.values[i] or 0 for line in stacked) for i in range(count)]
    top = _scale_top(totals)
    marks = []
    for index in range(count):
        x, width = _slot(index, count)
        base = 0.0
        for line in stacked:
            value = line.values[index] or 0
            if value <= 0:
                continue
            y_top, y_base = _y(base + value, top), _y(base, top)
            css = line.css_class
            if estimated and estimated[index]:
                css += " lq-estimated"
            marks.append(
                f'<rect class="lq-bar {css}" x="{x + width * 0.1:.1f}" y="{y_top:.1f}"'
                f' width="{width * 0.8:.1f}" height="{y_base - y_top:.1f}"/>'
            )
            base += value
    return _frame(queue, f"{top:,.0f}", when, "".join(marks) + _hits(titles))


def _lines(
    queue: str, lines: Sequence[Line], titles: Sequence[str], when: Sequence[str]
) -> SafeString:
    """Lines broken where a point has no value, a dot on each point that has one."""
    count = len(titles)
    top = _scale_top([value for line in lines for value in line.values if value is not None])
    marks = []
    for line in lines:
        runs: list[list[str]] = [[]]
        for index, value in enumerate(line.values):
            if value is None:
                runs.append([])
                continue
            x, width = _slot(index, count)
            cx, cy = x + width / 2, _y(value, top)
            runs[-1].append(f"{cx:.1f},{cy:.1f}")
            marks.append(
                f'<circle class="lq-dot {line.css_class}" cx="{cx:.1f}" cy="{cy:.1f}" r="2"/>'
            )
        commands = " ".join("M" + " L".join(run) for run in runs if run)
        if commands:
            marks.insert(0, f'<path class="lq-line {line.css_class}" d="{commands}"/>')
    return _frame(queue, milliseconds(top), when, "".join(marks) + _hits(titles))
