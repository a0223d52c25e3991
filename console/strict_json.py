"""Strict JSON: within the limits, that every database can store, or an error naming where.

Every JSON body the API reads goes through :func:`loads_strict`: DRF's ``request.data``
(:class:`console.api.parsers.StrictJSONParser`, every endpoint) and the events posted for ingestion
(``POST /api/v1/channels/{name}/events``, which reads its body raw). A body is refused,
before anything else looks at it, when

* it is bigger than ``SLUICE_MAX_REQUEST_BYTES`` (Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE``;
  ingestion has its own ``SLUICE_INGEST_MAX_REQUEST_BYTES``): 413;
* objects and arrays nest deeper than ``SLUICE_JSON_MAX_DEPTH`` (64) levels: 400 naming where
  (a deeper body would exhaust Python's recursion in the decoder, a 500 before);
* an object repeats a key (``{"a": 1, "a": 2}``; JSON leaves that undefined and Python keeps
  the last silently, so the server might validate one value and an earlier reader use
  another): 400 naming the key and its path;
* it is not strict JSON (``NaN``, ``Infinity``) or holds a string the database cannot store
  (NUL, an unpaired surrogate): 400 with the path.

Paths read like the spec's error paths: ``spec.transforms[0].config.pattern``.
"""

from __future__ import annotations

import json
import re
from functools import partial
from itertools import accumulate
from typing import Any

from django.conf import settings

TOP_LEVEL = "(top level)"

#: A JSON string (escapes included), and the tokens whose position gives a path.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:]', re.DOTALL)
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
#: How NUL or a UTF-16 surrogate can appear in JSON text (a lead for the full check).
_UNSTORABLE_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")


def _strict_constant(name: str) -> Any:
    raise ValueError(f"Out of range float values are not JSON compliant: {name!r}")


class StrictJSONError(ValueError):
    """A JSON document over a limit or not storable; ``str()`` says what and where."""


class JSONSyntaxError(StrictJSONError):
    """Not JSON at all (or not UTF-8): the decoder's own complaint."""


def max_json_depth() -> int:
    """The deepest nesting of objects and arrays a body may have (``SLUICE_JSON_MAX_DEPTH``)."""
    return settings.SLUICE_JSON_MAX_DEPTH


def loads_strict(text: str | bytes, *, max_depth: int | None = None, storable: bool = True) -> Any:
    """Parse ``text`` as strict JSON within the limits of the module docstring.

    Raises :class:`StrictJSONError` with a message that names the path of the problem
    (:class:`JSONSyntaxError` when it is not JSON). Never raises ``RecursionError``: depth is
    measured before the decoder runs, in time linear in the size of ``text``. With
    ``storable=False`` strings are not checked for what a database cannot store.
    """
    limit = max_json_depth() if max_depth is None else max_depth
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONSyntaxError(f"JSON parse error - the body is not UTF-8: {exc}") from None
    check_depth(text, limit)
    repeated: list[str] = []
    try:
        data = json.loads(
            text, parse_constant=_strict_constant, object_pairs_hook=partial(_object, repeated)
        )
    except ValueError as exc:
        raise JSONSyntaxError(f"JSON parse error - {exc}") from None
    # The walk costs as much as the parse: only when there is something to find. NUL and
    # lone surrogates can only be written as \u escapes (the decoder refuses raw control
    # characters, and UTF-8 text holds no surrogates).
    storable = storable and _UNSTORABLE_ESCAPE.search(text) is not None
    if not repeated and not storable:
        return data
    problem = _first_problem(data, "", storable)
    if problem is not None:
        raise StrictJSONError(problem)
    return data


def check_depth(text: str, limit: int) -> None:
    """Raise :class:`StrictJSONError` naming where objects and arrays in ``text`` nest deeper
    than ``limit`` levels; in time linear in its size, with no recursion (what Python's
    decoder, or a parser walking what it decoded, would exhaust)."""
    if _deepest(text) > limit:
        raise StrictJSONError(
            f"JSON parse error - objects and arrays nest deeper than {limit} levels "
            f"(at {_too_deep_path(text, limit)})."
        )


# -- depth ---------------------------------------------------------------------------------------


def _deepest(text: str) -> int:
    """How deep objects and arrays nest in ``text`` (brackets inside strings do not count)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_DEPTH_STEP.__getitem__, brackets)), default=0)


def _too_deep_path(text: str, limit: int) -> str:
    """The path of the first object or array that opens deeper than ``limit`` levels."""
    frames: list[list[Any]] = []  # ["[", index] or ["{", last string, key]
    for match in _TOKEN.finditer(text):
        token = match.group()
        first = token[0]
        if first in "[{":
            if len(frames) >= limit:
                return _frames_path(frames)
            frames.append(["[", 0] if first == "[" else ["{", None, None])
        elif first in "]}":
            if frames:
                frames.pop()
        elif first == ",":
            if frames and frames[-1][0] == "[":
                frames[-1][1] += 1
        elif first == ":":
            if frames and frames[-1][0] == "{":
                frames[-1][2] = frames[-1][1]
        elif frames and frames[-1][0] == "{":
            frames[-1][1] = token
    return _frames_path(frames)


def _frames_path(frames: list[list[Any]]) -> str:
    path = ""
    for frame in frames:
        if frame[0] == "[":
            path += f"[{frame[1]}]"
        else:
            path = _key_path(path, _decoded(frame[2]))
    return path or TOP_LEVEL


def _decoded(token: str | None) -> str:
    if token is None:
        return "?"
    try:
        return str(json.loads(token))
    except ValueError:
        return token.strip('"')


# -- duplicate keys and unstorable strings ---------------------------------------------------------


class _RepeatedKey(dict):
    """An object that repeated ``key`` (the decoder keeps going; the walk reports it)."""

    __slots__ = ("key",)
    key: str


def _object(repeated: list[str], pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    seen: set[str] = set()
    marked = _RepeatedKey(obj)
    # set.add returns None (falsy): it records the key and the search goes on.
    marked.key = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
    repeated.append(marked.key)
    return marked


def _first_problem(value: Any, path: str, storable: bool) -> str | None:
    """What is wrong with the first repeated key or unstorable string, in document order."""
    if isinstance(value, _RepeatedKey):
        return (
            f"JSON parse error - duplicate key {value.key!r} (at {_key_path(path, value.key)}): "
            f"a key may appear once in an object."
        )
    if isinstance(value, dict):
        for key, item in value.items():
            if storable and not _storable_text(key):
                return _unstorable_message(path or "(top-level key)")
            found = _first_problem(item, _key_path(path, key), storable)
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _first_problem(item, f"{path}[{index}]", storable)
            if found is not None:
                return found
    elif storable and isinstance(value, str) and not _storable_text(value):
        return _unstorable_message(path)
    return None


def _unstorable_message(path: str) -> str:
    where = f" (at {path})" if path else ""
    return (
        f"JSON parse error - strings may not contain NUL (\\u0000) or unpaired "
        f"surrogates (\\ud800-\\udfff){where}."
    )


def _key_path(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _storable_text(text: str) -> bool:
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
