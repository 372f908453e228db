"""Search the job list by argument: ``user_id=42 email=a@b.c`` finds the recent jobs whose
keyword arguments, or a dict among their positional arguments, hold exactly these values (every
term must match).

A value that reads as a JSON number, ``true``, ``false`` or ``null`` matches that value and the
same text as a string (``42`` finds ``user_id=42`` and ``user_id="42"``); any other value matches
the string. The match is JSONB containment of the whole value under its name, so ``user_id=42``
never finds ``user_id=420`` or ``order_id=42``.

Arguments have no index (one would slow every enqueue): the search reads a bounded recent window
of the table instead, as a primary-key range, since job ids are time-ordered (``ids.py``): the
jobs enqueued in the last 24 hours by default, 7 or 30 days on the page's links
(``?q_window=``), and of those at most the newest ``MAX_ROWS``, so that a search never reads the
whole table, however busy the window was.
"""

import json
import math
import shlex
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from django_leasequeue.conf import job_database
from django_leasequeue.sql import search_window as search_window_sql
from django_leasequeue.sql.executor import execute

# The windows searched (``?q_window=``), the first the default.
WINDOWS = {"24h": timedelta(days=1), "7d": timedelta(days=7), "30d": timedelta(days=30)}
DEFAULT_WINDOW = "24h"
WINDOW_PARAMETER = "q_window"
# Most jobs one search reads: the newest of the window (docs/benchmarks.md: under 200 ms).
MAX_ROWS = 50_000
# JSON literals that also match as themselves, not only as text.
_LITERALS = (int, float, bool, type(None))


@dataclass(frozen=True, slots=True)
class ArgumentTerm:
    """``name=value``: the argument's name and every JSON value the text stands for."""

    name: str
    values: tuple[Any, ...]

    def condition(self) -> Q:
        """Keyword arguments holding it, or a dict among the positional ones holding it."""
        condition = Q()
        for value in self.values:
            condition |= Q(kwargs__contains={self.name: value})
            condition |= Q(args__contains=[{self.name: value}])
        return condition


def is_argument_search(search: str) -> bool:
    """Whether the search box holds ``name=value`` terms (else it is the list's other search)."""
    return "=" in search


def parse(search: str) -> list[ArgumentTerm]:
    """The terms of ``user_id=42 email="a b"`` (shell quoting); ValueError saying why for a
    search that is not ``name=value`` terms."""
    try:
        words = shlex.split(search)
    except ValueError as exc:
        raise ValueError(_("The search has an unclosed quote: %s.") % exc) from exc
    terms = []
    for word in words:
        name, equals, text = word.partition("=")
        if not equals or not name:
            raise ValueError(
                _(
                    "%(word)r is not name=value: an argument search takes only name=value terms "
                    "(user_id=42 email=a@b.c)."
                )
                % {"word": word}
            )
        terms.append(ArgumentTerm(name, _values(text)))
    return terms


def _values(text: str) -> tuple[Any, ...]:
    try:
        literal = json.loads(text)
    except ValueError:
        return (text,)
    if isinstance(literal, float) and not math.isfinite(literal):  # NaN, Infinity: not JSON
        return (text,)
    if isinstance(literal, _LITERALS):
        return (literal, text)
    return (text,)


def window_of(request: HttpRequest) -> str:
    """The window the list's URL asks for (``bad_window`` refuses any other)."""
    window = request.GET.get(WINDOW_PARAMETER, DEFAULT_WINDOW)
    return window if window in WINDOWS else DEFAULT_WINDOW


def bad_window(request: HttpRequest) -> str | None:
    """Why the URL's ``q_window`` cannot be searched, or None when it can."""
    window = request.GET.get(WINDOW_PARAMETER, DEFAULT_WINDOW)
    if window in WINDOWS:
        return None
    return _("Unknown search window %(window)r: choose one of %(windows)s.") % {
        "window": window,
        "windows": ", ".join(WINDOWS),
    }


@dataclass(frozen=True, slots=True)
class SearchedWindow:
    """What an argument search reads: the jobs from ``since_id`` on; ``capped`` when that is
    the ``MAX_ROWS``-th newest job rather than the window's start."""

    window: str
    since_id: UUID
    capped: bool


def searched_window(window: str, now: datetime) -> SearchedWindow:
    """The window's jobs as a primary-key range: from the least id of its first millisecond,
    or from the ``MAX_ROWS``-th newest job when more were enqueued since."""
    floor = UUID(int=int((now - WINDOWS[window]).timestamp() * 1000) << 80)
    nth = execute(search_window_sql.nth_newest_id(floor, MAX_ROWS), job_database())
    if nth is None:
        return SearchedWindow(window, floor, capped=False)
    return SearchedWindow(window, nth, capped=True)


def search(queryset: QuerySet, request: HttpRequest, search_text: str) -> QuerySet:
    """``queryset`` narrowed to the searched window's jobs matching every term."""
    terms = parse(search_text)
    matching = queryset.filter(pk__gte=searched(request).since_id)
    for term in terms:
        matching = matching.filter(term.condition())
    return matching


def searched(request: HttpRequest) -> SearchedWindow:
    """The window this request's search reads, found once per request."""
    found = getattr(request, "_leasequeue_searched_window", None)
    if found is None:
        found = searched_window(window_of(request), timezone.now())
        request._leasequeue_searched_window = found  # type: ignore[attr-defined]
    return found


def page_context(request: HttpRequest, search_text: str) -> dict[str, Any]:
    """What the list shows of an argument search: the window read, the links widening it."""
    if not is_argument_search(search_text):
        return {}
    found = searched(request)
    return {
        "argument_search": {
            "window": found.window,
            "capped": found.capped,
            "max_rows": MAX_ROWS,
            "links": widening_links(request, found.window),
        }
    }


def widening_links(request: HttpRequest, window: str) -> list[dict[str, Any]]:
    """The page's links to the same search over each window, the current one marked."""
    links = []
    for name in WINDOWS:
        params = request.GET.copy()
        params[WINDOW_PARAMETER] = name
        params.pop("p", None)  # back to the first page
        links.append({"name": name, "url": f"?{params.urlencode()}", "current": name == window})
    return links


class SearchWindowFilter(admin.SimpleListFilter):
    """Takes ``?q_window=`` for the argument search (which reads it; ``bad_window`` refuses an
    unknown one); offers nothing itself: the links to wider windows are shown with the
    search's results."""

    title = gettext_lazy("searched window")
    parameter_name = WINDOW_PARAMETER

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple]:
        return []

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset  # never called: a filter without choices is not applied
