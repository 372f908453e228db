"""``GuardedModelAdmin``: what every leasequeue admin page takes from its URL.

- A list takes only the query parameters it offers: its filters, search, ordering and
  pagination. Django's admin would filter on any lookup of the model's own fields
  (``?name__regex=^x``, ``?steps_total__gt=100``): an unindexed scan of a table that may hold
  millions of rows, per page load, for anyone with the view permission. Anything else is
  refused, as Django refuses a lookup it does not allow: 400. So is a filter value holding a
  NUL, which PostgreSQL's text cannot hold (the query would fail: a 500). Facet counts
  (``?_facets``), which count every filter's choices over the whole table, are not offered.
- An object page (change, history, delete, and our own buttons) answers an id holding a NUL as
  Django answers a missing object (a redirect with a message), instead of sending PostgreSQL a
  text key it cannot compare.
"""

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest


class GuardedModelAdmin(admin.ModelAdmin):
    """The base of every leasequeue ModelAdmin (see the module's docstring)."""

    show_facets = admin.ShowFacets.NEVER

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest | None = None) -> bool:
        return "\x00" not in value and lookup in self.offered_lookups()

    def offered_lookups(self) -> set[str | None]:
        """The filter parameters the list offers: a field filter's (``status`` and
        ``status__exact``) and each ``SimpleListFilter``'s ``parameter_name``."""
        offered: set[str | None] = set()
        for list_filter in self.list_filter:
            if isinstance(list_filter, str):
                offered |= {list_filter, f"{list_filter}__exact"}
            elif isinstance(list_filter, type) and issubclass(list_filter, admin.SimpleListFilter):
                offered.add(list_filter.parameter_name)
        return offered

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> Model | None:
        """The object, or None (Django's "does not exist") for an id no row can have."""
        if "\x00" in object_id:
            return None
        return super().get_object(request, object_id, from_field)
