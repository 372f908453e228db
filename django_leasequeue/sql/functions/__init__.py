"""The database's functions and triggers, as they are now: the text a reader (and a migration's
author) reads to learn what a claim or a completion runs in PostgreSQL.

One file per function, ``<function name>.sql``: a ``CREATE OR REPLACE FUNCTION`` under a header
comment that says what it does and why. ``triggers.sql`` holds the ``CREATE OR REPLACE TRIGGER``
statements. ``FUNCTIONS`` maps each function's name to its file's text, ``TRIGGERS`` is the
text of ``triggers.sql``.

The migrations install them, each from a frozen copy of its own (a migration never reads these
files, which change). Changing a file therefore takes a migration that installs the new text,
and ``tests/integration/test_sql_functions.py`` fails while a migrated database and a file
disagree. These are not named queries: ``QUERIES`` (``django_leasequeue.sql``) reads only the
``*.sql`` files of ``sql/`` itself.
"""

from importlib.resources import files

TRIGGERS_FILE = "triggers.sql"
FUNCTION_PREFIX = "leasequeue_"


def _texts() -> dict[str, str]:
    """Every ``.sql`` file of this directory, by file name."""
    return {
        resource.name: resource.read_text()
        for resource in sorted(files(__package__).iterdir(), key=lambda r: r.name)
        if resource.name.endswith(".sql")
    }


def _functions(texts: dict[str, str]) -> dict[str, str]:
    functions = {}
    for file_name, text in texts.items():
        if file_name == TRIGGERS_FILE:
            continue
        if not file_name.startswith(FUNCTION_PREFIX):
            raise ValueError(
                f"sql/functions/{file_name}: a function's file is named after it "
                f"({FUNCTION_PREFIX}...sql); triggers go in {TRIGGERS_FILE}."
            )
        functions[file_name.removesuffix(".sql")] = text
    return functions


_TEXTS = _texts()
FUNCTIONS: dict[str, str] = _functions(_TEXTS)
TRIGGERS: str = _TEXTS.get(TRIGGERS_FILE, "")


def function_sql(name: str) -> str:
    """The ``CREATE OR REPLACE FUNCTION`` text of the function ``name``
    (``leasequeue_claim_batch``...), its header comment included."""
    try:
        return FUNCTIONS[name]
    except KeyError:
        raise KeyError(f"No function {name!r}: sql/functions/ has {sorted(FUNCTIONS)}") from None
