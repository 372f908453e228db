"""Task arguments as JSON (``jsonargs.py``): strict compact encoding, decoded as JSON gives back."""

import json

import pytest

from django_leasequeue.jsonargs import decoded, dumps


def test_dumps_is_strict_compact_json():
    value = {"a": [1, (2, 3)], "b": "é", "c": None, "d": 1.5}
    assert dumps(value) == json.dumps(value, separators=(",", ":"))
    for bad in ([float("nan")], [float("inf")], [object()], [b"x"]):
        with pytest.raises((TypeError, ValueError)):
            dumps(bad)
    circular: list = []
    circular.append(circular)
    with pytest.raises(ValueError, match="circular"):
        dumps(circular)


@pytest.mark.parametrize(
    "args",
    [(1, "a", None, True, 2.5), ((1, 2), "x"), ({"k": (1,)},), ("[not a list]", "{}"), ()],
)
def test_decoded_arguments_are_what_json_gives_back(args):
    text = dumps(list(args))
    assert decoded(args, text) == json.loads(text)
    assert [type(v) for v in decoded(args, text)] == [type(v) for v in json.loads(text)]
