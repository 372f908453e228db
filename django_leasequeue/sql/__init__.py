"""Loads the ``*.sql`` files of this package into ``QUERIES``: every raw SQL statement of the app,
by name.

Each statement starts with a ``-- name: <name>`` line and a one-line ``-- <description>``, and
runs until the next one. Parameters use psycopg's ``%(name)s`` style, so the same text runs on
Django's cursor and on the worker's psycopg ``AsyncConnection``. The files split the statements
by concern (``jobs``, ``reads``, ``operator_actions``, ``flow``, ``workers``, ``workflows``,
``schedules``, ``queue_control``); a name is defined once across all of them. Beside each file,
the module of the same name (``jobs.py`` beside ``jobs.sql``) builds its statements as
``Statement``s (``statement.py``), which ``executor.py`` runs.

A ``{{name}}`` token in the text (``{{table.name}}``: each column qualified by ``table.``) stands
for one of the column lists of ``job_columns.py``, written once there instead of in every
statement. The loader replaces it once, as it reads the files, wrapped under the token's first
column (lines of at most 98 characters, as the lists written out were). Braces cannot clash
with psycopg's ``%(name)s`` parameters, and a doubled brace appears nowhere else in this
package's SQL: an unknown name, or a ``{{`` left over, is refused.
"""

import re
from dataclasses import dataclass
from importlib.resources import files

from django_leasequeue.sql.job_columns import COLUMN_LISTS

_HEADER = re.compile(r"^-- name: (?P<name>\w+)\n-- (?P<description>.+)\n", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Query:
    name: str
    description: str
    sql: str


_COLUMN_LIST = re.compile(r"\{\{(?:(?P<table>\w+)\.)?(?P<name>\w+)\}\}")
# An expanded list's lines stay within this many characters, as the lists written out did.
_LINE_LENGTH = 98


def expand_column_lists(text: str, source: str = "the SQL") -> str:
    """``text`` with each ``{{name}}`` / ``{{table.name}}`` token replaced by its column list."""

    def column_list(token: re.Match[str]) -> str:
        columns = COLUMN_LISTS.get(token["name"])
        if columns is None:
            raise ValueError(
                f"{source} names an unknown column list {token[0]}; the lists are "
                f"{sorted(COLUMN_LISTS)} (sql/job_columns.py)."
            )
        prefix = f"{token['table']}." if token["table"] else ""
        indent = token.start() - (text.rfind("\n", 0, token.start()) + 1)
        lines: list[str] = []
        line: list[str] = []
        width = indent
        for column in columns:
            item = f"{prefix}{column}"
            # Each item but the last is followed by a comma; items on one line by a space.
            needed = len(item) + 1 + (1 if line else 0)
            if line and width + needed > _LINE_LENGTH:
                lines.append(", ".join(line) + ",")
                line, width = [], indent
                needed = len(item) + 1
            line.append(item)
            width += needed
        lines.append(", ".join(line))
        return ("\n" + " " * indent).join(lines)

    expanded = _COLUMN_LIST.sub(column_list, text)
    if "{{" in expanded:
        raise ValueError(f"{source} holds a {{{{ that is no column list token.")
    return expanded


def load_queries(text: str, source: str = "the SQL") -> dict[str, Query]:
    """Split one file's text on its ``-- name:`` headers, its column lists expanded."""
    text = expand_column_lists(text, source)
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
