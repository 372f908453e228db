"""Strict JSON encoding of job arguments, results and checkpoints: nothing is pickled."""

import json
from collections.abc import Mapping, Sequence
from json.encoder import c_make_encoder, encode_basestring_ascii
from typing import Any

from django_leasequeue.exceptions import InvalidTaskArguments


def _refuse(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# json.dumps() builds a new encoder on every call, which costs more than encoding a job's
# arguments. So build CPython's C encoder once (compact, ASCII, NaN refused). It keeps no
# cycle markers (a shared marker dict is not thread-safe): a circular value ends in
# RecursionError, reported below as ValueError. Elsewhere, the pure-Python encoder.
_ENCODE = (
    c_make_encoder(None, _refuse, encode_basestring_ascii, None, ":", ",", False, False, False)
    if c_make_encoder is not None
    else None
)
_ENCODER = json.JSONEncoder(allow_nan=False, separators=(",", ":"))


def dumps(value: Any) -> str:
    """Encode as JSON, refusing NaN/Infinity (PostgreSQL's jsonb cannot store them)."""
    if _ENCODE is None:
        return _ENCODER.encode(value)
    try:
        return "".join(_ENCODE(value, 0))
    except RecursionError:
        raise ValueError("circular reference, or nested too deeply") from None


def encode_arguments(
    task_path: str, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> tuple[str, str]:
    """Encode a call's arguments as JSON; raise InvalidTaskArguments naming the first bad one."""
    try:
        args_json = dumps(list(args))
        kwargs_json = dumps(dict(kwargs)) if kwargs else "{}"
        # A dict with non-string keys encodes silently but would come back changed. Walk the
        # values only where a dict can be: the walk is most of the cost of the common case.
        if ("{" in args_json and _has_non_string_keys(args)) or (
            kwargs and _has_non_string_keys(kwargs)
        ):
            raise TypeError("dictionary keys must be strings")
        return args_json, kwargs_json
    except (TypeError, ValueError):
        pass
    named = [(f"args[{i}]", value) for i, value in enumerate(args)]
    named += [(f"kwargs[{key!r}]", value) for key, value in kwargs.items()]
    for label, value in named:
        try:
            if _has_non_string_keys(value):
                raise TypeError("dictionary keys must be strings, or they change on the way back")
            dumps(value)
        except (TypeError, ValueError) as exc:
            raise InvalidTaskArguments(
                f"Cannot enqueue {task_path}: argument {label} = {value!r:.80} is not JSON "
                f"({exc}). Pass ids, strings, numbers, lists and dicts, not objects."
            ) from None
    raise InvalidTaskArguments(f"Cannot enqueue {task_path}: keyword names must be strings.")


def decoded(args: Sequence[Any], args_json: str) -> list[Any]:
    """The arguments as they come back from JSON (what the worker will be called with).

    A flat list of strings, numbers, booleans and None comes back as it went in, so skip the
    decoding then (bulk enqueue does this once per job).
    """
    if "{" in args_json or "[" in args_json[1:]:
        return json.loads(args_json)
    return list(args)


def _has_non_string_keys(value: Any) -> bool:
    if isinstance(value, dict):
        return any(not isinstance(key, str) or _has_non_string_keys(v) for key, v in value.items())
    if isinstance(value, list | tuple):
        return any(_has_non_string_keys(item) for item in value)
    return False
