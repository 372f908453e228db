"""Strict JSON for job arguments, results and checkpoints: nothing is pickled, and nothing is
written that PostgreSQL or a worker could not read back.

Refused, with the reason: values that are not JSON, dicts with non-string keys, NaN and
infinities, NUL characters (jsonb cannot hold them), nesting deeper than ``MAX_NESTING`` and,
when a limit is set, an encoding larger than ``max_bytes``.
"""

import json
from collections.abc import Iterable, Mapping, Sequence
from json.encoder import (  # type: ignore[attr-defined]  # the C encoder, not in typeshed
    c_make_encoder,
    encode_basestring_ascii,
)
from typing import Any, NoReturn

from django_leasequeue.exceptions import InvalidTaskArguments

# Deepest nesting of lists and dicts a job's arguments, result or checkpoint may have. Deep
# enough for any real payload, far below what makes Python's JSON decoder recurse too deep.
MAX_NESTING = 100
# How a NUL character looks in our (ASCII-only) encoding; jsonb refuses it.
_NUL = "\\u0000"


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


def storable(value: Any, max_bytes: int | None = None) -> str:
    """``dumps``, then the checks that make sure PostgreSQL stores it and a worker reads it back.

    Raises TypeError or ValueError naming the problem.
    """
    if nesting_exceeds(value, MAX_NESTING):
        raise ValueError(f"nested more than {MAX_NESTING} levels deep")
    text = dumps(value)
    problem = text_problem(text, max_bytes)
    if problem:
        raise ValueError(problem)
    return text


def text_problem(text: str, max_bytes: int | None) -> str | None:
    """Why an encoded value cannot be stored, or None. (Our encoding is ASCII: one byte a char.)"""
    if _NUL in text:
        return "contains a NUL character (\\x00), which PostgreSQL cannot store"
    if max_bytes is not None and len(text) > max_bytes:
        return f"is {len(text):,} bytes as JSON, over the limit of {max_bytes:,}"
    return None


def nesting_exceeds(value: Any, limit: int) -> bool:
    """Whether lists and dicts nest deeper than ``limit`` (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def encode_arguments(
    task_path: str, args: Sequence[Any], kwargs: Mapping[str, Any], max_bytes: int | None = None
) -> tuple[str, str]:
    """Encode a call's arguments as JSON; raise InvalidTaskArguments naming the first bad one."""
    try:
        args_json = dumps(list(args))
        kwargs_json = dumps(dict(kwargs)) if kwargs else "{}"
    except (TypeError, ValueError):
        _raise_for_first_bad_argument(task_path, args, kwargs)
    # Cheap checks first: nesting can only be deep where many brackets are, and dict keys can
    # only be wrong where a dict is.
    brackets = sum(text.count("[") + text.count("{") for text in (args_json, kwargs_json))
    if (
        (
            brackets > MAX_NESTING
            and (nesting_exceeds(list(args), MAX_NESTING) or nesting_exceeds(kwargs, MAX_NESTING))
        )
        or ("{" in args_json and _has_non_string_keys(args))
        or (kwargs and _has_non_string_keys(kwargs))
        or _NUL in args_json
        or _NUL in kwargs_json
    ):
        _raise_for_first_bad_argument(task_path, args, kwargs)
    if max_bytes is not None and len(args_json) + len(kwargs_json) > max_bytes:
        raise InvalidTaskArguments(
            f"Cannot enqueue {task_path}: its arguments are "
            f"{len(args_json) + len(kwargs_json):,} bytes as JSON, over the limit of "
            f"{max_bytes:,} (OPTIONS['max_argument_bytes']). Pass ids, not the data itself."
        )
    return args_json, kwargs_json


def _raise_for_first_bad_argument(
    task_path: str, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> NoReturn:
    named = [(f"args[{i}]", value) for i, value in enumerate(args)]
    named += [(f"kwargs[{key!r}]", value) for key, value in kwargs.items()]
    for label, value in named:
        try:
            if nesting_exceeds(value, MAX_NESTING - 1):  # inside the list of all arguments
                raise ValueError(f"nested more than {MAX_NESTING} levels deep")
            if _has_non_string_keys(value):
                raise TypeError("dictionary keys must be strings, or they change on the way back")
            problem = text_problem(dumps(value), None)
            if problem:
                raise ValueError(problem)
        except (TypeError, ValueError) as exc:
            raise InvalidTaskArguments(
                f"Cannot enqueue {task_path}: argument {label} = {_preview(value)} is not JSON "
                f"that can be stored ({exc}). Pass ids, strings, numbers, lists and dicts, "
                "not objects."
            ) from None
    if any(not isinstance(key, str) for key in kwargs):
        raise InvalidTaskArguments(f"Cannot enqueue {task_path}: keyword names must be strings.")
    raise InvalidTaskArguments(f"Cannot enqueue {task_path}: its arguments cannot be stored.")


def _preview(value: Any) -> str:
    """The start of ``repr(value)``, without building the whole of a huge or deep value."""
    if isinstance(value, list | tuple | dict) and nesting_exceeds(value, 3):
        return f"<a {type(value).__name__} nested deeply>"
    try:
        return f"{value!r:.80}"
    except RecursionError:
        return f"<a {type(value).__name__}>"


def decoded(args: Sequence[Any], args_json: str) -> list[Any]:
    """The arguments as they come back from JSON (what the worker will be called with).

    A flat list of strings, numbers, booleans and None comes back as it went in, so skip the
    decoding then (bulk enqueue does this once per job).
    """
    if "{" in args_json or "[" in args_json[1:]:
        return json.loads(args_json)
    return list(args)


def _has_non_string_keys(value: Any) -> bool:
    """Any dict key that is not a string, at any depth (callers bound the depth first)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if any(not isinstance(key, str) for key in item):
                return True
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False
