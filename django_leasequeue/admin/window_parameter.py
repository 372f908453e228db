"""The ``window`` parameter of the dashboard and the failures page: one of the page's own windows,
by name, the page's default when the parameter is absent."""

from collections.abc import Mapping

from django.http import QueryDict


def chosen_window[T](
    parameters: QueryDict, windows: Mapping[str, T], default: str
) -> tuple[str, T | None]:
    """The name asked for (``default`` when absent) and its window among ``windows``; ``None``
    for a name that is not one of them (an empty one included): each page answers that in its
    own words, or falls back on its default."""
    name = parameters.get("window", default)
    return name, windows.get(name)
