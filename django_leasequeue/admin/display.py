"""HTML fragments the job admin shows: status badges, lease timings, progress, JSON, errors.

Pure functions of a job's values and the current time, so the list and the detail page render
the same words. Every state is spelled out in text; colour only repeats it.
"""

import json
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from django_leasequeue.choices import JobStatus, WorkflowStatus
from django_leasequeue.progress.state import percent

EMPTY = "—"
# Bytes of a stored JSON value the detail page shows before offering it as a download.
PREVIEW_BYTES = 10_000

# A symbol per status, so the status reads without colour (and in a screen reader, as text).
STATUS_SYMBOLS = {
    JobStatus.WAITING: "◌",
    JobStatus.QUEUED: "◷",
    JobStatus.RUNNING: "▶",
    JobStatus.RETRYING: "↻",
    JobStatus.SUCCEEDED: "✔",
    JobStatus.FAILED: "✖",
    JobStatus.CANCELLED: "⊘",
}


def duration(delta: timedelta) -> str:
    """A short human duration: "450 ms", "12 s", "3 min 5 s", "2 h 10 min", "3 d 4 h"."""
    seconds = delta.total_seconds()
    if seconds < 0:
        seconds = 0.0
    if seconds < 1:
        return _("%d ms") % round(seconds * 1000)
    if seconds < 60:
        return _("%d s") % seconds
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return _("%(m)d min %(s)d s") % {"m": minutes, "s": secs}
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return _("%(h)d h %(m)d min") % {"h": hours, "m": minutes}
    days, hours = divmod(hours, 24)
    return _("%(d)d d %(h)d h") % {"d": days, "h": hours}


def timestamp(moment: datetime | None, now: datetime) -> SafeString | str:
    """Time of day for today's moments, date and time otherwise; the full time on hover."""
    if moment is None:
        return EMPTY
    local = timezone.localtime(moment)
    short = "H:i:s" if local.date() == timezone.localtime(now).date() else "M j, H:i"
    return format_html(
        '<time datetime="{}" title="{}">{}</time>',
        moment.isoformat(),
        date_format(local, "Y-m-d H:i:s.u T"),
        date_format(local, short),
    )


def moment(value: datetime | None, now: datetime) -> str:
    """Full local time to the second, and how far from now: "2026-11-29 10:44:11 (3 s ago)"."""
    if value is None:
        return EMPTY
    when = date_format(timezone.localtime(value), "Y-m-d H:i:s T")
    if value <= now:
        return _("%(when)s (%(ago)s ago)") % {"when": when, "ago": duration(now - value)}
    return _("%(when)s (in %(in)s)") % {"when": when, "in": duration(value - now)}


def status_badge(status: str, cancel_requested: bool = False) -> SafeString:
    label = JobStatus(status).label
    badge = format_html(
        '<span class="lq-status lq-status-{}"><span aria-hidden="true">{}</span> {}</span>',
        status,
        STATUS_SYMBOLS[JobStatus(status)],
        label,
    )
    if cancel_requested and status == JobStatus.RUNNING:
        return format_html('{} <span class="lq-note">{}</span>', badge, _("cancel requested"))
    return badge


def workflow_badge(status: str, cancel_requested: bool = False) -> SafeString:
    """A workflow's status, drawn as a job's of the same name is."""
    workflow_status = WorkflowStatus(status)
    badge = format_html(
        '<span class="lq-status lq-status-{}"><span aria-hidden="true">{}</span> {}</span>',
        status,
        STATUS_SYMBOLS[JobStatus(status)],
        workflow_status.label,
    )
    if cancel_requested and workflow_status == WorkflowStatus.RUNNING:
        return format_html('{} <span class="lq-note">{}</span>', badge, _("cancel requested"))
    return badge


def heartbeat_age(status: str, heartbeat_at: datetime | None, now: datetime) -> str:
    """How long ago the worker last renewed the lease; only meaningful while running."""
    if status != JobStatus.RUNNING or heartbeat_at is None:
        return EMPTY
    return _("%s ago") % duration(now - heartbeat_at)


def lease_state(status: str, lease_expires_at: datetime | None, now: datetime) -> SafeString | str:
    """Time left on a running job's lease, or that it expired and the sweep will take it back."""
    if status != JobStatus.RUNNING or lease_expires_at is None:
        return EMPTY
    if lease_expires_at > now:
        return _("%s left") % duration(lease_expires_at - now)
    return format_html(
        '<span class="lq-expired">{}</span>',
        _("expired %s ago — will be recovered") % duration(now - lease_expires_at),
    )


def progress_bar(progress: dict[str, Any] | None, status: str) -> SafeString | str:
    """An accessible progress bar with its percentage (or count) and message in text.

    The percentage is the live bar's (``progress.state.percent``), so the two always agree.
    """
    if not progress:
        return EMPTY
    current = progress.get("current") or 0
    total = progress.get("total")
    message = progress.get("message") or ""
    done = percent(current, total, status)
    if done is not None:
        return format_html(
            '<span class="lq-progress"><progress max="100" value="{}" aria-label="{}"></progress>'
            " {}%{}</span>",
            done,
            message or _("progress"),
            done,
            format_html(" · {}", clipped(message, "lq-progress-message")) if message else "",
        )
    return format_html(
        '<span class="lq-progress"><progress aria-label="{}"></progress> {}{}</span>',
        message or _("progress"),
        f"{current:g}",
        format_html(" · {}", clipped(message, "lq-progress-message")) if message else "",
    )


def clipped(text: str, extra_class: str = "") -> SafeString:
    """Text cut to its column's width with an ellipsis (CSS), whole in its tooltip."""
    return format_html(
        '<span class="lq-clip{}" title="{}">{}</span>',
        f" {extra_class}" if extra_class else "",
        text,
        text,
    )


def run_time(
    status: str, started_at: datetime | None, finished_at: datetime | None, now: datetime
) -> str:
    """From the first start to the finish (every attempt of this run), or so far."""
    if started_at is None:
        return EMPTY
    if finished_at is not None:
        return duration(finished_at - started_at)
    if status in JobStatus.unfinished():
        return _("%s so far") % duration(now - started_at)
    return EMPTY


def json_preview(head: str | None, size: int | None, download_url: str) -> SafeString:
    """A stored JSON value, pretty when small; else its first ``PREVIEW_BYTES`` and a link to
    download it whole. ``head`` is the start of its text and ``size`` its length in bytes."""
    if head is None or size is None:
        return mark_safe('<pre class="lq-json">null</pre>')
    if size <= PREVIEW_BYTES:
        try:
            text = json.dumps(json.loads(head), indent=2, ensure_ascii=False)
        except (ValueError, RecursionError):
            return format_html(
                '<p class="lq-note">{}</p>', _("undecodable (%(size)s bytes)") % {"size": size}
            )
        return format_html('<pre class="lq-json">{}</pre>', text)
    return format_html(
        '<pre class="lq-json">{}…</pre><p class="lq-note">{} <a href="{}">{}</a></p>',
        head[:PREVIEW_BYTES],
        _("The first %(shown)s of %(size)s bytes.") % {"shown": PREVIEW_BYTES, "size": size},
        download_url,
        _("Download the whole value"),
    )


def error_list(errors: list[dict[str, Any]]) -> SafeString | str:
    """Every attempt's error, newest first, each with its traceback (the newest one open)."""
    if not errors:
        return _("No errors.")
    items = []
    for position, error in enumerate(reversed(errors)):
        items.append(
            (
                " open" if position == 0 else "",
                error.get("attempt", "?"),
                error.get("exception_class_path", ""),
                error.get("message", ""),
                error.get("worker_id") or EMPTY,
                error.get("at", ""),
                error.get("traceback") or _("(no traceback)"),
            )
        )
    return format_html(
        '<ul class="lq-errors">{}</ul>',
        format_html_join(
            "",
            "<li><details{}><summary>Attempt {} — <code>{}</code>: {}"
            ' <span class="lq-note">worker {}, at {}</span></summary>'
            '<pre class="lq-traceback">{}</pre></details></li>',
            items,
        ),
    )
