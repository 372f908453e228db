"""Strict JSON encoding of job arguments, results and checkpoints: nothing is pickled."""

import json
from typing import Any

from django.utils.json import normalize_json

from django_leasequeue.exceptions import InvalidTaskArguments


def dumps(value: Any) -> str:
    """Encode as JSON, refusing NaN/Infinity (PostgreSQL's jsonb cannot store them)."""
    return json.dumps(value, allow_nan=False, separators=(",", ":"))


def validate_arguments(task_path: str, args: tuple | list, kwargs: dict[str, Any]) -> None:
    """Raise InvalidTaskArguments naming the first argument that is not plain JSON."""
    named = [(f"args[{i}]", value) for i, value in enumerate(args)]
    named += [(f"kwargs[{key!r}]", value) for key, value in kwargs.items()]
    for label, value in named:
        try:
            if json.loads(dumps(value)) != normalize_json(value):
                raise TypeError("it would not come back unchanged from JSON; use string keys")
        except (TypeError, ValueError) as exc:
            raise InvalidTaskArguments(
                f"Cannot enqueue {task_path}: argument {label} = {value!r:.80} is not JSON "
                f"({exc}). Pass ids, strings, numbers, lists and dicts, not objects."
            ) from None
    bad_keys = [key for key in kwargs if not isinstance(key, str)]
    if bad_keys:
        raise InvalidTaskArguments(f"Cannot enqueue {task_path}: keyword names must be strings.")
