"""The demo's limits, overridable in settings."""

from django.conf import settings


def max_unfinished_jobs() -> int:
    """How many unfinished match jobs one user may have at a time."""
    return getattr(settings, "MATCHING_MAX_UNFINISHED_JOBS", 5)


def max_selection() -> int:
    """How many projects one submission may pick."""
    return getattr(settings, "MATCHING_MAX_SELECTION", 5)


def max_running_imports() -> int:
    """How many import workflows one user may have running at a time."""
    return getattr(settings, "MATCHING_MAX_RUNNING_IMPORTS", 2)
