"""A tiny table for the peer benchmark's "one database write" task."""

from django.db import models


class PeerRow(models.Model):
    """One row per job of the write benchmark; every system writes here through Django's ORM."""

    n = models.IntegerField()

    def __str__(self) -> str:
        return f"row {self.n}"
