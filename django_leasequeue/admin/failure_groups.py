"""Failure groups: a window's failed jobs by task and the exception class of their last error.

A group is named by an opaque, signed key holding its task, its exception class and the window
as the page showed it (from its start to the moment the page was read): a retry, a delete or the
link to the group's jobs acts on exactly those jobs, not on ones that failed after the operator
looked. Groups are read from the ``leasequeue_job_failures`` index alone (``sql/failures.sql``).
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from django.contrib import admin
from django.core import signing
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext_lazy as _

from django_leasequeue.choices import JobStatus
from django_leasequeue.conf import job_database
from django_leasequeue.sql import failures as failures_sql
from django_leasequeue.sql.executor import execute

# The windows a page offers, by the name its URL gives (``?window=``).
WINDOWS = {"1h": timedelta(hours=1), "24h": timedelta(days=1), "7d": timedelta(days=7)}
DEFAULT_WINDOW = "24h"
# Most groups a page lists (the largest first); it says how many there are in all.
MAX_GROUPS = 200
_SALT = "django_leasequeue.admin.failure_groups"


@dataclass(frozen=True, slots=True)
class GroupKey:
    """What a group is: its task, its exception class (None: no error recorded) and window."""

    task_path: str
    exception: str | None
    since: datetime
    until: datetime

    def encode(self) -> str:
        fields = [self.task_path, self.exception, self.since.isoformat(), self.until.isoformat()]
        return signing.dumps(fields, salt=_SALT, compress=True)

    @classmethod
    def decode(cls, key: str) -> "GroupKey":
        """The group a key names; ValueError, saying so, for a key this site did not make."""
        try:
            task_path, exception, since, until = signing.loads(key, salt=_SALT)
            if not isinstance(task_path, str) or not isinstance(exception, str | None):
                raise TypeError(task_path, exception)
            return cls(task_path, exception, _moment(since), _moment(until))
        except (signing.BadSignature, TypeError, ValueError) as exc:
            raise ValueError(
                _("This failure group key is not one the failures page gave.")
            ) from exc

    def job_ids(self) -> list[UUID]:
        """Every job of the group as the page showed it that is still failed, in id order."""
        return execute(
            failures_sql.failure_group_ids(
                task_path=self.task_path,
                exception=self.exception,
                since=self.since,
                until=self.until,
            ),
            job_database(),
        )

    def filter(self, queryset: QuerySet) -> QuerySet:
        """The group's jobs in a job queryset (the list's ``?failure=`` filter)."""
        return queryset.filter(
            status=JobStatus.FAILED,
            finished_at__gte=self.since,
            finished_at__lte=self.until,
            task_path=self.task_path,
            **(
                {"last_error_class__isnull": True}
                if self.exception is None
                else {"last_error_class": self.exception}
            ),
        )


def _moment(text: object) -> datetime:
    moment = parse_datetime(text) if isinstance(text, str) else None
    if moment is None or moment.tzinfo is None:
        raise ValueError(text)
    return moment


@dataclass(frozen=True, slots=True)
class FailureGroup:
    """One row of the failures page."""

    key: GroupKey
    count: int
    first_seen: datetime
    last_seen: datetime
    message: str | None

    def as_json(self) -> dict[str, object]:
        return {
            "key": self.key.encode(),
            "task": self.key.task_path,
            "exception": self.key.exception,
            "count": self.count,
            "first_seen": self.first_seen.isoformat(),
            "last_seen": self.last_seen.isoformat(),
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class FailureGroups:
    """The groups of a window, the largest first, and how many there are in all."""

    groups: list[FailureGroup]
    total: int


def failure_groups(window: timedelta, limit: int = MAX_GROUPS) -> FailureGroups:
    rows = execute(
        failures_sql.failure_groups(window_seconds=window.total_seconds(), limit=limit),
        job_database(),
    )
    groups = [
        FailureGroup(
            key=GroupKey(row["task_path"], row["exception"], row["since"], row["until"]),
            count=row["count"],
            first_seen=row["first_seen"],
            last_seen=row["last_seen"],
            message=row["message"],
        )
        for row in rows
    ]
    return FailureGroups(groups, rows[0]["groups_total"] if rows else 0)


class FailureGroupFilter(admin.SimpleListFilter):
    """A failure group's jobs (``?failure=<key>``, the link on the failures page); offered only
    once chosen. A key the page did not give lists no job."""

    title = _("failure group")
    parameter_name = "failure"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple]:
        value = self.value()
        return [(value, _("this failure group's jobs"))] if value else []

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        if not value:
            return queryset
        try:
            return GroupKey.decode(value).filter(queryset)
        except ValueError:
            return queryset.none()
