"""What a ``name=value`` search term stands for (``admin/argument_search.py``); no database."""

import pytest

from django_leasequeue.admin.argument_search import (
    ArgumentTerm,
    is_argument_search,
    parse,
)


@pytest.mark.parametrize(
    ("search", "terms"),
    [
        ("user_id=42", [ArgumentTerm("user_id", (42, "42"))]),
        ("email=a@b.c", [ArgumentTerm("email", ("a@b.c",))]),
        (
            "ratio=0.5 ok=true",
            [ArgumentTerm("ratio", (0.5, "0.5")), ArgumentTerm("ok", (True, "true"))],
        ),
        ("gone=null", [ArgumentTerm("gone", (None, "null"))]),
        ('name="Ada Lovelace"', [ArgumentTerm("name", ("Ada Lovelace",))]),
        ("token=a=b", [ArgumentTerm("token", ("a=b",))]),  # split at the first =
        ("empty=", [ArgumentTerm("empty", ("",))]),
        # Only scalars stand for JSON: a list or object would match by containment, not exactly.
        ("tags=[1]", [ArgumentTerm("tags", ("[1]",))]),
        ("meta='{\"a\":1}'", [ArgumentTerm("meta", ('{"a":1}',))]),
        ("big=Infinity", [ArgumentTerm("big", ("Infinity",))]),
    ],
)
def test_terms(search, terms):
    assert parse(search) == terms


@pytest.mark.parametrize("search", ["user_id", "user_id=42 x", "=42", "'a=1"])
def test_a_search_of_anything_else_is_refused(search):
    with pytest.raises(ValueError):
        parse(search)


def test_only_a_search_with_an_equals_sign_is_an_argument_search():
    assert is_argument_search("user_id=42")
    assert not is_argument_search("app.tasks.send_email")
