"""The database's functions and triggers are what ``django_leasequeue/sql/functions/`` says.

The test database is migrated (pytest-django runs the migrations); each file is run on it inside
a transaction that is rolled back, and what PostgreSQL holds afterwards (``pg_get_functiondef``,
``pg_get_triggerdef``: its own rendering, so the files' layout does not matter) must be what it
held before. Comments and runs of whitespace are not compared: a file's comments may be edited
without a migration, its code may not. A function or trigger without a file, or a file without
its function, fails too.
"""

import difflib
import re

import pytest
from django.db import DatabaseError, connection, transaction

from django_leasequeue.sql.functions import FUNCTIONS, TRIGGERS

pytestmark = pytest.mark.django_db

_FUNCTIONS = """
SELECT p.oid::regprocedure::text, p.proname, pg_get_functiondef(p.oid)
FROM pg_proc AS p
WHERE p.proname LIKE 'leasequeue%' AND p.pronamespace = current_schema()::regnamespace
"""
_TRIGGERS = """
SELECT t.tgname, pg_get_triggerdef(t.oid)
FROM pg_trigger AS t JOIN pg_class AS c ON c.oid = t.tgrelid
WHERE NOT t.tgisinternal
  AND (c.relname LIKE 'leasequeue%' OR t.tgname LIKE 'leasequeue%'
       OR t.tgfoid::regproc::text LIKE 'leasequeue%')
"""
_CREATED_FUNCTION = re.compile(r"^CREATE OR REPLACE FUNCTION (\w+)\(", re.M)
_CREATED_TRIGGER = re.compile(r"^CREATE OR REPLACE TRIGGER (\w+) ", re.M)


def _code(definition: str) -> str:
    """A definition without its comments, its whitespace runs made one space."""
    return " ".join(re.sub(r"--[^\n]*", "", definition).split())


def _functions() -> dict[str, str]:
    """The app's functions, by signature: their definitions as PostgreSQL renders them."""
    with connection.cursor() as cursor:
        cursor.execute(_FUNCTIONS)
        return {signature: definition for signature, _, definition in cursor.fetchall()}


def _triggers() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute(_TRIGGERS)
        return dict(cursor.fetchall())


def _after_running(sql: str, read):
    """What ``read()`` returns once ``sql`` has run, in a transaction rolled back afterwards."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(sql)
        after = read()
        transaction.set_rollback(True)
    return after


def _changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """How ``after`` differs from ``before`` in code, as readable diffs."""
    changes = []
    for key in sorted(before.keys() | after.keys()):
        if key not in before:
            changes.append(f"{key}: made by the file, not in the database")
        elif key not in after:
            changes.append(f"{key}: dropped by the file")
        elif _code(before[key]) != _code(after[key]):
            diff = difflib.unified_diff(
                before[key].splitlines(), after[key].splitlines(), "database", "file", lineterm=""
            )
            changes.append(f"{key}:\n" + "\n".join(diff))
    return changes


def _names_of_database_functions() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(_FUNCTIONS)
        return {name for _, name, _ in cursor.fetchall()}


def test_every_function_of_the_database_has_its_file_and_every_file_its_function():
    assert FUNCTIONS, "sql/functions/ holds no function"
    for name, text in FUNCTIONS.items():
        assert _CREATED_FUNCTION.findall(text) == [name], (
            f"sql/functions/{name}.sql must create the one function {name}"
        )
    database = _names_of_database_functions()
    assert sorted(database - FUNCTIONS.keys()) == [], "functions without a file in sql/functions/"
    assert sorted(FUNCTIONS.keys() - database) == [], "files of functions the database lacks"


def test_every_trigger_of_the_database_is_in_triggers_sql_and_every_one_there_is_in_it():
    assert sorted(_CREATED_TRIGGER.findall(TRIGGERS)) == sorted(_triggers())


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_the_migrated_function_is_its_file(name):
    before = _functions()
    try:
        after = _after_running(FUNCTIONS[name], _functions)
    except DatabaseError as error:  # e.g. another return type: not the database's function
        pytest.fail(f"sql/functions/{name}.sql cannot replace the migrated function: {error}")
    changes = _changes(before, after)
    assert not changes, (
        f"sql/functions/{name}.sql and the migrated database disagree (a change to the file "
        "needs a migration that installs it):\n" + "\n\n".join(changes)
    )


def test_the_migrated_triggers_are_triggers_sql():
    before = _triggers()
    try:
        after = _after_running(TRIGGERS, _triggers)
    except DatabaseError as error:
        pytest.fail(f"sql/functions/triggers.sql cannot replace the migrated triggers: {error}")
    changes = _changes(before, after)
    assert not changes, (
        "sql/functions/triggers.sql and the migrated database disagree (a change to the file "
        "needs a migration that installs it):\n" + "\n\n".join(changes)
    )


def test_a_change_of_code_is_seen_and_a_change_of_comment_is_not():
    definition = "BEGIN\n    -- one\n    RETURN 1;\nEND"
    assert _code(definition) == _code(definition.replace("-- one", "-- two\n   "))
    assert _code(definition) != _code(definition.replace("RETURN 1", "RETURN 2"))
    assert _changes({"f()": definition}, {"f()": definition.replace("1", "2")})
    assert _changes({"f()": definition}, {"f()": definition, "f(integer)": definition})
