"""The SQL files of ``django_leasequeue/sql/``: split by concern, loaded into one ``QUERIES``."""

from pathlib import Path

import pytest

from django_leasequeue.sql import QUERIES, load_files, load_queries

SQL = Path(__file__).resolve().parents[2] / "django_leasequeue" / "sql"


def test_a_name_defined_in_two_files_is_refused_naming_both():
    texts = {
        "jobs.sql": "-- name: a\n-- first\nSELECT 1;\n",
        "reads.sql": "-- name: b\n-- other\nSELECT 2;\n\n-- name: a\n-- again\nSELECT 3;\n",
    }
    with pytest.raises(ValueError, match=r"'a' is defined twice: in jobs.sql and in reads.sql"):
        load_files(texts)


def test_every_sql_file_of_the_package_is_loaded():
    files = sorted(SQL.glob("*.sql"))
    assert len(files) > 1
    for path in files:
        queries = load_queries(path.read_text(), path.name)
        assert queries, f"{path.name} holds no query"
        assert all(QUERIES[name] == query for name, query in queries.items()), path.name
