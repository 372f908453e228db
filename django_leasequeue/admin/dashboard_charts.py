"""The dashboard's charts as inline SVG, drawn on the server: readable without JavaScript, no
CDN. Every interval is a point with a ``<title>`` that gives its values (a tooltip, and what a
screen reader reads); colours only repeat what the legend's labels say, and a line's pattern
(solid p50, dashed p95) tells the two percentiles apart without them.
"""

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.utils import formats, timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
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


def queue_charts(series: QueueSeries, window: Window) -> list[Chart]:
    """A queue's four charts: jobs finished, backlog, pickup latency, run time."""
    points = series.points
    when = [_time(point.t, window) for point in points]
    succeeded = Line(_("succeeded"), "lq-succeeded", [p.succeeded for p in points])
    failed = Line(_("failed"), "lq-failed", [p.failed for p in points])
    backlog = Line(_("due, not started"), "lq-backlog", [p.backlog for p in points])
    pickup = _percentiles(points, lambda p: (p.pickup_p50, p.pickup_p95))
    run = _percentiles(points, lambda p: (p.run_p50, p.run_p95))
    interval = _interval_words(window)
    return [
        Chart(
            _("Jobs finished per %(interval)s") % {"interval": interval},
            _bars(
                series.queue_name,
                [succeeded, failed],
                [
                    _("%(when)s: %(succeeded)s succeeded, %(failed)s failed")
                    % {"when": t, "succeeded": p.succeeded, "failed": p.failed}
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
                [_backlog_title(t, p) for t, p in zip(when, points, strict=True)],
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


def _percentiles(
    points: Sequence[Point], values: Callable[[Point], tuple[float | None, float | None]]
) -> list[Line]:
    pairs = [values(point) for point in points]
    return [
        Line("p50", "lq-p50", [pair[0] for pair in pairs]),
        Line("p95", "lq-p95", [pair[1] for pair in pairs]),
    ]


def _interval_words(window: Window) -> str:
    return {60: _("minute"), 900: _("15 minutes"), 3600: _("hour")}[window.seconds]


def _time(moment: datetime, window: Window) -> str:
    local = timezone.localtime(moment)
    return formats.date_format(local, "D H:i" if window.seconds >= 3600 else "H:i")


def _backlog_title(when: str, point: Point) -> str:
    if point.backlog is None:
        return _("%(when)s: backlog not measured (no worker ran)") % {"when": when}
    if point.backlog_estimated:
        return _("%(when)s: about %(count)s due, not started (estimated)") % {
            "when": when,
            "count": f"{point.backlog:,}",
        }
    return _("%(when)s: %(count)s due, not started") % {"when": when, "count": f"{point.backlog:,}"}


def _latency_titles(when: Sequence[str], lines: Sequence[Line]) -> list[str]:
    p50, p95 = lines
    return [
        _("%(when)s: nothing") % {"when": t}
        if low is None
        else _("%(when)s: p50 %(p50)s, p95 %(p95)s")
        % {"when": t, "p50": milliseconds(low), "p95": milliseconds(high)}
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
    for step in (1, 2, 5, 10):
        if largest <= step * power:
            return float(step * power)
    raise AssertionError("unreachable: 10 times the power is above the value")


def _frame(label: str, top_label: str, when: Sequence[str], body: SafeString) -> SafeString:
    """The SVG around a chart's marks: its axes and their labels."""
    bottom = HEIGHT - BOTTOM
    return format_html(
        '<svg xmlns="http://www.w3.org/2000/svg" class="lq-chart-svg" role="group"'
        ' aria-label="{}" viewBox="0 0 {} {}" width="{}" height="{}">'
        '<line class="lq-axis" x1="{}" y1="{}" x2="{}" y2="{}"/>'
        '<line class="lq-axis" x1="{}" y1="{}" x2="{}" y2="{}"/>'
        '<text class="lq-axis-label" x="{}" y="{}" text-anchor="end">{}</text>'
        '<text class="lq-axis-label" x="{}" y="{}" text-anchor="end">0</text>'
        '<text class="lq-axis-label" x="{}" y="{}">{}</text>'
        '<text class="lq-axis-label" x="{}" y="{}" text-anchor="end">{}</text>'
        "{}</svg>",
        label,
        WIDTH,
        HEIGHT,
        WIDTH,
        HEIGHT,
        LEFT,
        TOP,
        LEFT,
        bottom,
        LEFT,
        bottom,
        WIDTH,
        bottom,
        LEFT - 4,
        TOP + 8,
        top_label,
        LEFT - 4,
        bottom,
        LEFT,
        HEIGHT - 4,
        when[0],
        WIDTH,
        HEIGHT - 4,
        when[-1],
        body,
    )


def _slot(index: int, count: int) -> tuple[float, float]:
    """The x and width of a point's slot."""
    width = (WIDTH - LEFT) / count
    return LEFT + index * width, width


def _y(value: float, top: float) -> float:
    return HEIGHT - BOTTOM - (HEIGHT - BOTTOM - TOP) * value / top


def _hits(titles: Sequence[str]) -> SafeString:
    """A transparent column per point, the height of the chart, holding its title."""
    count = len(titles)
    columns = []
    for index, title in enumerate(titles):
        x, width = _slot(index, count)
        columns.append((f"{x:.1f}", TOP, f"{width:.1f}", HEIGHT - BOTTOM - TOP, title))
    return format_html_join(
        "",
        '<rect class="lq-point" x="{}" y="{}" width="{}" height="{}"><title>{}</title></rect>',
        columns,
    )


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
                (
                    css,
                    f"{x + width * 0.1:.1f}",
                    f"{y_top:.1f}",
                    f"{width * 0.8:.1f}",
                    f"{y_base - y_top:.1f}",
                )
            )
            base += value
    body = format_html_join(
        "",
        '<rect class="lq-bar {}" x="{}" y="{}" width="{}" height="{}"/>',
        marks,
    )
    return _frame(queue, f"{top:,.0f}", when, format_html("{}{}", body, _hits(titles)))


def _lines(
    queue: str, lines: Sequence[Line], titles: Sequence[str], when: Sequence[str]
) -> SafeString:
    """Lines broken where a point has no value, a dot on each point that has one."""
    count = len(titles)
    top = _scale_top([value for line in lines for value in line.values if value is not None])
    paths = []
    dots = []
    for line in lines:
        runs: list[list[tuple[float, float]]] = [[]]
        for index, value in enumerate(line.values):
            if value is None:
                runs.append([])
                continue
            x, width = _slot(index, count)
            point = (x + width / 2, _y(value, top))
            runs[-1].append(point)
            dots.append((line.css_class, f"{point[0]:.1f}", f"{point[1]:.1f}"))
        commands = " ".join(
            "M" + " L".join(f"{x:.1f},{y:.1f}" for x, y in run) for run in runs if run
        )
        if commands:
            paths.append((line.css_class, commands))
    body = format_html(
        "{}{}{}",
        format_html_join("", '<path class="lq-line {}" d="{}"/>', paths),
        format_html_join("", '<circle class="lq-dot {}" cx="{}" cy="{}" r="2"/>', dots),
        _hits(titles),
    )
    return _frame(queue, milliseconds(top), when, body)
