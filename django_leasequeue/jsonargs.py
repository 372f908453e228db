"""The one rule for every value a job row holds: arguments, results, checkpoints, progress
messages, keys and errors. Nothing is pickled, and nothing is sent that PostgreSQL would refuse
or that a worker could not read back as it was.

A JSON value is storable when it holds only dicts with string keys, lists, strings, whole
numbers of at most ``MAX_INT_DIGITS`` digits, finite floats, booleans and None, nests at most
``MAX_NESTING`` deep and, when a limit is set, encodes to at most ``max_bytes``. A string (a JSON
string, a key or a text column) is storable when it holds no NUL character (PostgreSQL's text
and jsonb cannot) and no surrogate code point (lone surrogates are not Unicode: PostgreSQL
refuses them, and a pair of them would come back as one other character).

``encode`` is the fast path: CPython's C encoder, its output encoded to UTF-8 (which refuses a
surrogate), then a scan for the few patterns that may hide a problem (a NUL escape, a float's
exponent, many brackets, a key written from a number); only then is the value walked
(``problem_in``) to name the problem and where it is, e.g. "lone surrogate U+DC80 at [0],
character 4". ``dumps`` (ASCII, no checks) is for what the package itself builds.
"""

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from json.encoder import (  # type: ignore[attr-defined]  # the C encoder, not in typeshed
    c_encode_basestring,
    c_make_encoder,
    encode_basestring,
    encode_basestring_ascii,
)
from typing import Any, NoReturn

from django_leasequeue.exceptions import InvalidTaskArguments, UnstorableValue

# Deepest nesting of lists and dicts a job's arguments, result or checkpoint may have. Deep
# enough for any real payload, far below what makes Python's JSON decoder recurse too deep.
MAX_NESTING = 100
# Python reads and writes longer integers only when told to (sys.set_int_max_str_digits);
# a worker could not read such a value back.
MAX_INT_DIGITS = 4300
# How a NUL character looks in the encoding (an escape): jsonb refuses it. A literal backslash
# followed by "u0000" looks alike, so a match is confirmed by walking the value.
_NUL = "\\u0000"
# A float's repr with a positive exponent (1e+16): jsonb keeps the number, not that it was a
# float, and gives back the integer 10000000000000000 (for 1e+23, a different number).
_EXPONENT = "e+"


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
# The same, writing characters as they are (UTF-8 on the wire): a surrogate code point then
# shows when the text is encoded to UTF-8, which no ASCII escape can tell from an emoji's.
_ENCODE_TEXT = (
    c_make_encoder(None, _refuse, c_encode_basestring, None, ":", ",", False, False, False)
    if c_make_encoder is not None and c_encode_basestring is not None
    else None
)
_TEXT_ENCODER = json.JSONEncoder(allow_nan=False, ensure_ascii=False, separators=(",", ":"))
# A dict key the encoder wrote from 1, 2.5, True or None looks like "1":, "2.5":, "true":,
# "null": (a quote inside a string is escaped, so only real keys match). A string key that
# looks alike is rare; the walk then tells them apart.
_NUMBER_LIKE_KEY = re.compile(r'[{,]"(?:-?[0-9][^"]*|true|false|null|NaN|-?Infinity)":')


def dumps(value: Any) -> str:
    """Encode as compact ASCII JSON, refusing NaN/Infinity. No other check: see ``encode``."""
    if _ENCODE is None:
        return _ENCODER.encode(value)
    try:
        return "".join(_ENCODE(value, 0))
    except RecursionError:
        raise ValueError("circular reference, or nested too deeply") from None


def encode(value: Any, what: str, max_bytes: int | None = None) -> str:
    """The JSON PostgreSQL stores for ``value`` (read back, it equals ``value``).

    Raises ``UnstorableValue`` naming ``what`` (e.g. "return value"), the problem and where.
    """
    try:
        text = _dumps_text(value)
        size = len(text) if text.isascii() else len(text.encode("utf-8"))
    except (TypeError, ValueError, UnicodeEncodeError):
        found = problem_in(value) or ("cannot be encoded as JSON", "")
        raise UnstorableValue(what, *found) from None
    if (
        _NUL in text
        or _EXPONENT in text
        or text.count("[") + text.count("{") > MAX_NESTING
        # The encoder turns 1, 2.5, True and None keys into strings: they would change.
        or ("{" in text and _NUMBER_LIKE_KEY.search(text) is not None)
    ):
        problem = problem_in(value)
        if problem is not None:
            raise UnstorableValue(what, *problem)
        if _EXPONENT in text:
            text = _encode_exact(value)
            size = len(text.encode("utf-8"))
    if max_bytes is not None and size > max_bytes:
        raise UnstorableValue(what, f"{size:,} bytes as JSON, over the limit of {max_bytes:,}")
    return text


def _dumps_text(value: Any) -> str:
    """``dumps``, writing characters as they are instead of as escapes."""
    if _ENCODE_TEXT is None:
        return _TEXT_ENCODER.encode(value)
    try:
        return "".join(_ENCODE_TEXT(value, 0))
    except RecursionError:
        raise ValueError("circular reference, or nested too deeply") from None


def problem_in(value: Any, *, inside: int = 0) -> tuple[str, str] | None:
    """The first problem that makes ``value`` unstorable and where it is (``[0]["name"]``,
    ``character 4`` inside a string), or None. ``inside``: how deep the value sits in the one
    that is stored (an argument sits in the list of arguments)."""
    found = _problem(value, "", 1 + inside, MAX_NESTING)
    if found is None or len(found[1]) <= _LONGEST_PATH:
        return found
    problem, where = found
    return problem, f"{where[: _LONGEST_PATH // 2]}...{where[-_LONGEST_PATH // 2 :]}"


_LONGEST_PATH = 80


def _problem(value: Any, path: str, depth: int, depth_limit: int) -> tuple[str, str] | None:
    # Recursion is bounded by depth_limit (a circular value is reported as nested too deeply).
    if isinstance(value, str):
        bad = _string_problem(value)
        return None if bad is None else (bad[0], _join(path, f"character {bad[1]}"))
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        if too_many_digits(value):
            return f"an integer of more than {MAX_INT_DIGITS:,} digits", path
        return None
    if isinstance(value, float):
        if value != value or value in (_INFINITY, -_INFINITY):
            return f"{value!r} (JSON has no NaN or infinity)", path
        return None
    if not isinstance(value, dict | list | tuple):
        return f"an object of type {type(value).__name__}, which is not JSON", path
    if depth > depth_limit:
        return f"nested more than {depth_limit} levels deep (or circular)", path
    if isinstance(value, dict):
        for key, child in value.items():
            if not isinstance(key, str):
                return f"a dictionary key {key!r:.40} that is not a string", path
            bad = _string_problem(key)
            if bad is not None:
                return f"{bad[0]} in a key", _join(path, f"key {key!r:.40}")
            found = _problem(child, f"{path}[{key!r:.40}]", depth + 1, depth_limit)
            if found is not None:
                return found
        return None
    for index, child in enumerate(value):
        found = _problem(child, f"{path}[{index}]", depth + 1, depth_limit)
        if found is not None:
            return found
    return None


_INFINITY = float("inf")


def _join(path: str, detail: str) -> str:
    return f"{path}, {detail}" if path else detail


def _string_problem(text: str) -> tuple[str, int] | None:
    """What PostgreSQL cannot store in this string, and at which character, or None."""
    if "\x00" in text:
        return "NUL character (\\x00)", text.index("\x00")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"lone surrogate U+{ord(text[exc.start]):04X}", exc.start
    return None


def text_problem(text: str) -> str | None:
    """Why PostgreSQL cannot store this string (a text column or a JSON string), or None."""
    found = _string_problem(text)
    return None if found is None else f"{found[0]} at character {found[1]}"


def escaped_text(text: str) -> str:
    """``text`` with what PostgreSQL cannot store written out as escapes (``\\x00``,
    ``\\udc80``): for exception messages and tracebacks, which are kept, not refused."""
    if _string_problem(text) is None:
        return text
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def too_many_digits(number: int) -> bool:
    """Whether an integer has more digits than Python reads back by default."""
    # 3.32 bits a digit: below this many bits, no need to compare with the limit.
    return number.bit_length() >= MAX_INT_DIGITS * 3 and abs(number) >= _FIRST_TOO_LONG


_FIRST_TOO_LONG = 10**MAX_INT_DIGITS


def _encode_exact(value: Any) -> str:
    """``dumps``, with each float that has a positive exponent written out in full with
    ``.0`` (1e+23 as 99999999999999991611392.0), which jsonb keeps as that float. Only for
    values ``problem_in`` passed, so the recursion is bounded by MAX_NESTING."""
    if isinstance(value, float):
        text = repr(value)
        return f"{int(value)}.0" if _EXPONENT in text else text
    if isinstance(value, dict):
        items = (f"{encode_basestring(k)}:{_encode_exact(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_encode_exact(item) for item in value) + "]"
    return _dumps_text(value)


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
    """Encode a call's arguments; raise InvalidTaskArguments naming the first bad one."""
    try:
        args_json = encode(list(args), "arguments")
        kwargs_json = encode(dict(kwargs), "arguments") if kwargs else "{}"
    except UnstorableValue:
        _raise_for_first_bad_argument(task_path, args, kwargs)
    if max_bytes is not None and len(args_json) + len(kwargs_json) > max_bytes:
        # Characters first (cheap): bytes are never fewer.
        size = _utf8_size(args_json) + _utf8_size(kwargs_json)
        if size > max_bytes:
            raise InvalidTaskArguments(
                f"Cannot enqueue {task_path}: its arguments are {size:,} bytes as JSON, over "
                f"the limit of {max_bytes:,} (OPTIONS['max_argument_bytes']). Pass ids, not "
                "the data itself."
            )
    return args_json, kwargs_json


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _raise_for_first_bad_argument(
    task_path: str, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> NoReturn:
    if any(not isinstance(key, str) for key in kwargs):
        raise InvalidTaskArguments(f"Cannot enqueue {task_path}: keyword names must be strings.")
    named = [(f"args[{i}]", value) for i, value in enumerate(args)]
    named += [(f"kwargs[{key!r}]", value) for key, value in kwargs.items()]
    for label, value in named:
        found = problem_in(value, inside=1)  # in the list (or dict) of all arguments
        if found is None:
            continue
        problem, where = found
        at = label + where if where.startswith("[") else _join(label, where)
        hint = (
            " Pass ids, strings, numbers, lists and dicts, not objects."
            if "not JSON" in problem or "not a string" in problem
            else ""
        )
        raise InvalidTaskArguments(
            f"Cannot enqueue {task_path}: argument {label} = {_preview(value)} is not JSON that "
            f"can be stored ({problem} at {at}).{hint}"
        )
    raise InvalidTaskArguments(f"Cannot enqueue {task_path}: its arguments cannot be stored.")


def _preview(value: Any) -> str:
    """The start of ``repr(value)``, without building the whole of a huge or deep value."""
    if isinstance(value, list | tuple | dict) and nesting_exceeds(value, 3):
        return f"<a {type(value).__name__} nested deeply>"
    if isinstance(value, int) and too_many_digits(value):
        return f"<an integer of {value.bit_length():,} bits>"
    try:
        return f"{value!r:.80}"
    except (RecursionError, ValueError):
        return f"<a {type(value).__name__}>"


def decoded(args: Sequence[Any], args_json: str) -> list[Any]:
    """The arguments as they come back from JSON (what the worker will be called with).

    A flat list of strings, numbers, booleans and None comes back as it went in, so skip the
    decoding then (bulk enqueue does this once per job).
    """
    if "{" in args_json or "[" in args_json[1:]:
        return json.loads(args_json)
    return list(args)
