"""A paginator that does not COUNT(*) a large job table on every page load."""

import json
from functools import cached_property

from django.core.paginator import Paginator
from django.db import OperationalError, transaction
from django.db.models import QuerySet

from django_leasequeue.sql import reads as reads_sql
from django_leasequeue.sql.executor import execute

# Below this many estimated rows an exact count is usually cheap, and exact numbers are nicer.
EXACT_COUNT_BELOW = 10_000
# ... but a filter no index serves (a rare queue, a search) would count by a sequential scan:
# such a count is cancelled after this long and the estimate shown instead.
COUNT_TIME_LIMIT_MS = 50


class EstimatedCountPaginator(Paginator):
    """Counts exactly when that is cheap, otherwise uses the planner's estimate.

    The estimate is the planner's row count for the list query (``EXPLAIN``, no execution):
    for the unfiltered list that is the table's ``pg_class.reltuples``, for a filter the
    statistics' selectivity. ``estimated`` tells the template to say "about".
    """

    object_list: QuerySet  # the admin's job list
    estimated = False

    @cached_property
    def count(self) -> int:
        if self.object_list.query.is_empty():  # .none(), e.g. a filter value that matches nothing
            return 0
        plan = json.loads(self.object_list.explain(format="json"))
        estimate = int(plan[0]["Plan"]["Plan Rows"])
        if estimate < EXACT_COUNT_BELOW:
            database = self.object_list.db
            try:
                with transaction.atomic(using=database):
                    execute(
                        reads_sql.limit_statement_time(milliseconds=COUNT_TIME_LIMIT_MS), database
                    )
                    return super().count
            except OperationalError:  # cancelled: counting would have been a long scan
                pass
        self.estimated = True
        return estimate
