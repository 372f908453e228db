"""Loads the ``*.sql`` files of this package into ``QUERIES``: every raw SQL statement of the app,
by name.

Each statement starts with a ``-- name: <name>`` line and a one-line ``-- <description>``, and
runs until the next one. Parameters use psycopg's ``%(name)s`` style, so the same text runs on
Django's cursor and on the worker's psycopg ``AsyncConnection``. The files split the statements
by concern (``jobs``, ``reads``, ``operator_actions``, ``flow``, ``workers``, ``workflows``,
``schedules``, ``queue_control``); a name is defined once across all of them. Beside each file,
the module of the same name (``jobs.py`` beside ``jobs.sql``) builds its statements as
``Statement``s (``statement.py``), which ``executor.py`` runs.
"""

import re
from dataclasses import dataclass
from importlib.resources import files

_HEADER = re.compile(r"^-- name: (?P<name>\w+)\n-- (?P<description>.+)\n", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Query:
    name: str
    description: str
    sql: str


def load_queries(text: str, source: str = "the SQL") -> dict[str, Query]:
    """Split one file's text on its ``-- name:`` headers."""
    headers = list(_HEADER.finditer(text))
    queries = {}
    for header, following in zip(headers, [*headers[1:], None], strict=True):
        body = text[header.end() : following.start() if following else len(text)]
        name = header["name"]
        if name in queries:
            raise ValueError(f"Query {name!r} is defined twice in {source}.")
        queries[name] = Query(name, header["description"], body.strip().rstrip(";"))
    return queries


def load_files(texts: dict[str, str]) -> dict[str, Query]:
    """The queries of several files (``file name -> text``) in one dict, refusing a name that
    two files define."""
    queries: dict[str, Query] = {}
    defined_in: dict[str, str] = {}
    for source, text in texts.items():
        for name, query in load_queries(text, source).items():
            if name in queries:
                raise ValueError(
                    f"Query {name!r} is defined twice: in {defined_in[name]} and in {source}."
                )
            queries[name], defined_in[name] = query, source
    return queries


QUERIES: dict[str, Query] = load_files(
    {
        resource.name: resource.read_text()
        for resource in sorted(files(__package__).iterdir(), key=lambda r: r.name)
        if resource.name.endswith(".sql")
    }
)
