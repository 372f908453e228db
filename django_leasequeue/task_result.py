"""``LeaseTaskResult``: Django's TaskResult without re-normalising decoded JSON."""

from dataclasses import dataclass

from django.tasks import TaskResult


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaseTaskResult(TaskResult):
    """Django's TaskResult, for args and kwargs that are decoded JSON already.

    Django's ``__post_init__`` normalises them into JSON types again. Ours always come out of
    ``json.loads`` or a jsonb column, where that is a no-op costing about two thirds of
    building the result, and bulk enqueue builds one per job.
    """

    def __post_init__(self) -> None:
        pass
