"""Fenced business writes: user writes commit together with the job only while the lease is held."""

import warnings
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from django.db import transaction

from django_leasequeue.exceptions import LeaseLost
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.executor import execute
from django_leasequeue.sql.records import Lease


class FencedTransaction:
    """Handle given inside ``fenced_atomic``; can finish the job inside the same transaction."""

    def __init__(self, lease: Lease, database: str) -> None:
        self.lease = lease
        self.database = database
        self.completed = False

    @property
    def using(self) -> str:
        """Deprecated name of ``database``."""
        warnings.warn(
            "FencedTransaction.using is deprecated: read FencedTransaction.database.",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.database

    def complete(self, result: Any = None) -> None:
        """Mark the job succeeded in this transaction, so it commits with the user's writes."""
        if not execute(jobs_sql.complete(self.lease, result), self.database):
            raise LeaseLost(f"Job {self.lease.job_id}: lease lost before completion.")
        self.completed = True


def fenced_atomic(
    lease: Lease, database: str = "default", *, using: str | None = None
) -> AbstractContextManager[FencedTransaction]:
    """Open ``transaction.atomic()`` on the database alias ``database``, lock the job row and
    check the lease token.

    Raises LeaseLost (and rolls back) if the lease is not held. The row lock makes a concurrent
    takeover (recover, another claim) wait until this transaction ends, so the writes inside
    cannot interleave with a newer lease holder's. ``using`` is the deprecated name of
    ``database``.
    """
    if using is not None:
        warnings.warn(
            "fenced_atomic(using=...) is deprecated: pass database=... instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        database = using
    return _fenced_atomic(lease, database)


@contextmanager
def _fenced_atomic(lease: Lease, database: str) -> Iterator[FencedTransaction]:
    with transaction.atomic(using=database):
        if not execute(jobs_sql.lock_lease(lease), database):
            raise LeaseLost(
                f"Job {lease.job_id}: lease version {lease.lease_version} is no longer held; "
                "the writes in this block were not applied."
            )
        yield FencedTransaction(lease, database)
