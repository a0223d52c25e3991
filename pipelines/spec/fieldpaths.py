"""Field paths and JSONPath input paths into an event's CloudEvents JSON form (no pyspark).

A *field path* is dotted text: its first segment is a top-level member of the JSON form (an
attribute such as ``subject``, an extension name, or ``data``), the others are object keys
below it (``data.order.id``). Keys holding a ``.`` cannot be addressed.

An *input path* is a JSONPath of the subset EventBridge input transformers use: ``$`` then
``.name``, ``['name']`` / ``["name"]`` and ``[index]`` steps (``$.data.items[0].sku``).
"""

from __future__ import annotations

import re

from pydantic import JsonValue

ATTRIBUTE_NAMES = (
    "id",
    "source",
    "specversion",
    "type",
    "subject",
    "time",
    "datacontenttype",
    "dataschema",
)
EXTENSION_NAME = re.compile(r"[a-z0-9]{1,20}")
"""CloudEvents extension attribute names: lower-case letters and digits (at most 20)."""

FIELD_PATH_KEY = "x-sluice-field-path"
"""The JSON Schema keyword marking a config field whose value is a path into the event (the
builder suggests the known fields there): ``read`` or ``write`` a dotted field path, or
``jsonpath`` an input path."""
READS_FIELD: dict[str, JsonValue] = {FIELD_PATH_KEY: "read"}
WRITES_FIELD: dict[str, JsonValue] = {FIELD_PATH_KEY: "write"}
READS_JSONPATH: dict[str, JsonValue] = {FIELD_PATH_KEY: "jsonpath"}

PathStep = str | int
_JSONPATH_STEP = re.compile(
    r"\.(?P<name>[A-Za-z0-9_$@-][^.\[\]]*)"
    r"|\['(?P<single>[^'\\]*)'\]"
    r'|\["(?P<double>[^"\\]*)"\]'
    r"|\[(?P<index>0|[1-9][0-9]{0,8})\]"
)


def parse_field_path(text: str, *, data_only: bool = False) -> tuple[str, ...]:
    """Split a dotted field path into segments, or raise ``ValueError``.

    The first segment must be ``data``, an attribute or an extension name; with
    ``data_only`` the path must be ``data.<key>[.<key>...]`` (a member inside the payload).
    """
    segments = tuple(text.split("."))
    if not text or any(segment == "" for segment in segments):
        raise ValueError(f"{text!r} is not a dotted field path such as data.order.id")
    if data_only:
        if segments[0] != "data" or len(segments) < 2:
            raise ValueError(f"{text!r} must address a field inside data, e.g. data.order.id")
        return segments
    head = segments[0]
    if head not in (*ATTRIBUTE_NAMES, "data") and not EXTENSION_NAME.fullmatch(head):
        raise ValueError(
            f"{text!r} must start with data, an attribute ({', '.join(ATTRIBUTE_NAMES)}) "
            "or an extension name (lower-case letters and digits)"
        )
    if head != "data" and len(segments) > 1:
        raise ValueError(f"{text!r}: only data has fields below it")
    return segments


def parse_json_path(text: str) -> tuple[PathStep, ...]:
    """Parse a JSONPath (``$.data.items[0]['a b']``) into keys and indexes, or raise
    ``ValueError``. The first step must be a key (a top-level member of the JSON form)."""
    if not text.startswith("$"):
        raise ValueError(f"{text!r} is not a JSONPath: it must start with $")
    steps: list[PathStep] = []
    position = 1
    while position < len(text):
        match = _JSONPATH_STEP.match(text, position)
        if match is None:
            raise ValueError(f"{text!r} is not a supported JSONPath (at character {position})")
        index = match.group("index")
        steps.append(int(index) if index is not None else _key(match))
        position = match.end()
    if not steps or not isinstance(steps[0], str):
        raise ValueError(f"{text!r} must name a member of the event, e.g. $.data.id or $.source")
    return tuple(steps)


def _key(match: re.Match[str]) -> str:
    for group in ("name", "single", "double"):
        if match.group(group) is not None:
            return match.group(group)
    raise AssertionError("unreachable")
