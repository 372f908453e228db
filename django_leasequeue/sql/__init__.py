"""Loads ``queries.sql`` into ``QUERIES``: every raw SQL statement of the app, by name."""

import re
from dataclasses import dataclass
from importlib.resources import files

_HEADER = re.compile(r"^-- name: (?P<name>\w+)\n-- (?P<description>.+)\n", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Query:
    name: str
    description: str
    sql: str


def load_queries(text: str) -> dict[str, Query]:
    """Split a queries file on its ``-- name:`` headers."""
    headers = list(_HEADER.finditer(text))
    queries = {}
    for header, following in zip(headers, [*headers[1:], None], strict=True):
        body = text[header.end() : following.start() if following else len(text)]
        name = header["name"]
        if name in queries:
            raise ValueError(f"Query {name!r} is defined twice in queries.sql.")
        queries[name] = Query(name, header["description"], body.strip().rstrip(";"))
    return queries


QUERIES: dict[str, Query] = load_queries(files(__package__).joinpath("queries.sql").read_text())
