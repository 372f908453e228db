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
whole table, however busy the window was. It lists the newest ``MAX_MATCHES`` matches.
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

# The windows a search reads (``?q_window=``).
WINDOWS = {"24h": timedelta(days=1), "7d": timedelta(days=7), "30d": timedelta(days=30)}
DEFAULT_WINDOW = "24h"
WINDOW_PARAMETER = "q_window"
# Most jobs one search reads, the newest of its window: bench/failures_search.py times it on
# a week of 1,000,000 jobs (docs/admin.md).
MAX_ROWS = 50_000
# Most matches listed, the newest: the list and its count read them by primary key.
MAX_MATCHES = 1_000
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


@dataclass(slots=True)
class ArgumentSearch:
    """One request's argument search: the jobs it reads (from ``since_id`` on; ``rows_capped``
    when that is the ``MAX_ROWS``-th newest job rather than the window's start), and whether
    more than ``MAX_MATCHES`` matched (the list then shows the newest ``MAX_MATCHES``). The
    list's note above the results reads it as the page renders, after the search ran."""

    window: str
    since_id: UUID
    rows_capped: bool
    links: list[dict[str, Any]]
    max_rows: int
    max_matches: int
    matches_capped: bool = False


def _window_start(window: str, now: datetime) -> UUID:
    """The least job id of the window's first millisecond."""
    return UUID(int=int((now - WINDOWS[window]).timestamp() * 1000) << 80)


def argument_search(request: HttpRequest) -> ArgumentSearch:
    """This request's search, its window found once (the ``MAX_ROWS``-th newest id of it)."""
    found = getattr(request, "_leasequeue_argument_search", None)
    if found is None:
        window = window_of(request)
        floor = _window_start(window, timezone.now())
        nth = execute(search_window_sql.nth_newest_id(floor, MAX_ROWS), job_database())
        found = ArgumentSearch(
            window,
            since_id=floor if nth is None else nth,
            rows_capped=nth is not None,
            links=widening_links(request, window),
            max_rows=MAX_ROWS,
            max_matches=MAX_MATCHES,
        )
        request._leasequeue_argument_search = found  # type: ignore[attr-defined]
    return found


def search(queryset: QuerySet, request: HttpRequest, search_text: str) -> QuerySet:
    """``queryset`` narrowed to the newest ``MAX_MATCHES`` of the searched window's jobs that
    match every term.

    The window is walked once, for the matching ids; the list's page and its count then read
    those ids by primary key (a count over the terms would walk the window a second time).
    """
    terms = parse(search_text)
    state = argument_search(request)
    matching = queryset.filter(pk__gte=state.since_id)
    for term in terms:
        matching = matching.filter(term.condition())
    ids = list(matching.order_by("-pk").values_list("pk", flat=True)[: MAX_MATCHES + 1])
    state.matches_capped = len(ids) > MAX_MATCHES
    return queryset.filter(pk__in=ids[:MAX_MATCHES])


def page_context(request: HttpRequest, search_text: str) -> dict[str, Any]:
    """What the list shows of an argument search: what it read, the links widening it."""
    if not is_argument_search(search_text):
        return {}
    return {"argument_search": argument_search(request)}


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
