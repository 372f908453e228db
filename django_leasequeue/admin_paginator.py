"""A paginator that does not COUNT(*) a large job table on every page load."""

import json
from functools import cached_property

from django.core.paginator import Paginator

# Below this many estimated rows an exact count is cheap enough, and exact numbers are nicer.
EXACT_COUNT_BELOW = 10_000


class EstimatedCountPaginator(Paginator):
    """Counts exactly when the planner expects few rows, otherwise uses its estimate.

    The estimate is the planner's row count for the list query (``EXPLAIN``, no execution):
    for the unfiltered list that is the table's ``pg_class.reltuples``, for a filter the
    statistics' selectivity. ``estimated`` tells the template to say "about".
    """

    estimated = False

    @cached_property
    def count(self) -> int:
        plan = json.loads(self.object_list.explain(format="json"))
        estimate = int(plan[0]["Plan"]["Plan Rows"])
        if estimate < EXACT_COUNT_BELOW:
            return super().count
        self.estimated = True
        return estimate
