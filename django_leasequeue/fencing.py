"""Fenced business writes: user writes commit together with the job only while the lease is held."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import transaction

from django_leasequeue import protocol
from django_leasequeue.exceptions import LeaseLost
from django_leasequeue.protocol import Lease


class FencedTransaction:
    """Handle given inside ``fenced_atomic``; can finish the job inside the same transaction."""

    def __init__(self, lease: Lease, using: str) -> None:
        self.lease = lease
        self.using = using
        self.completed = False

    def complete(self, result: Any = None) -> None:
        """Mark the job succeeded in this transaction, so it commits with the user's writes."""
        if not protocol.execute(protocol.complete(self.lease, result), self.using):
            raise LeaseLost(f"Job {self.lease.job_id}: lease lost before completion.")
        self.completed = True


@contextmanager
def fenced_atomic(lease: Lease, using: str = "default") -> Iterator[FencedTransaction]:
    """Open ``transaction.atomic()``, lock the job row and check the lease token.

    Raises LeaseLost (and rolls back) if the lease is not held. The row lock makes a concurrent
    takeover (recover, another claim) wait until this transaction ends, so the writes inside
    cannot interleave with a newer lease holder's.
    """
    with transaction.atomic(using=using):
        if not protocol.execute(protocol.lock_lease(lease), using):
            raise LeaseLost(
                f"Job {lease.job_id}: lease version {lease.lease_version} is no longer held; "
                "the writes in this block were not applied."
            )
        yield FencedTransaction(lease, using)
