"""The inference and merging of schema discovery (pure: no Spark), which the console runs
on the sampled events (:mod:`pipelines.discovery` samples them).

The inference is EventBridge's schema discovery's: the union of the fields seen, each
field's types widened as samples disagree (``integer`` and ``number`` make ``number``, other
disagreements a list of types), nested objects and arrays followed (an array's ``items``
merge every element). :func:`field_paths` lists the fields as the builder addresses them
(``data.order.amount``; an array's elements are matched through it, as event patterns do).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

MAX_DEPTH = 12
"""Nesting followed at most; deeper values are kept as ``{}`` (any JSON value)."""
MAX_PROPERTIES = 500
"""Properties kept per object at most (the first seen); an object past it allows more."""

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
_TYPE_ORDER = ("null", "boolean", "integer", "number", "string", "array", "object")


# -- inference and merging (pure) -----------------------------------------------------------


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "string"


def _types(schema: Mapping[str, Any]) -> list[str]:
    kind = schema.get("type")
    if kind is None:
        return []
    return [kind] if isinstance(kind, str) else list(kind)


def _with_types(schema: dict[str, Any], types: Iterable[str]) -> dict[str, Any]:
    kinds = set(types)
    if "integer" in kinds and "number" in kinds:
        kinds.discard("integer")  # widened
    ordered = [kind for kind in _TYPE_ORDER if kind in kinds]
    if not ordered:
        schema.pop("type", None)
    else:
        schema["type"] = ordered[0] if len(ordered) == 1 else ordered
    if "object" not in kinds:
        schema.pop("properties", None)
    if "array" not in kinds:
        schema.pop("items", None)
    return schema


def infer(value: Any, depth: int = 0) -> dict[str, Any]:
    """The JSON Schema of one JSON value (no ``$schema``: see :func:`document`)."""
    kind = _type_of(value)
    if depth >= MAX_DEPTH and kind in ("array", "object"):
        return {}
    schema: dict[str, Any] = {"type": kind}
    if kind == "object":
        properties: dict[str, Any] = {}
        for key, member in value.items():
            if len(properties) >= MAX_PROPERTIES:
                break
            properties[str(key)] = infer(member, depth + 1)
        schema["properties"] = properties
    elif kind == "array":
        items: dict[str, Any] | None = None
        for element in value:
            inferred = infer(element, depth + 1)
            items = inferred if items is None else merge(items, inferred)
        if items is not None:
            schema["items"] = items
    return schema


def merge(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """The narrowest schema both ``a`` and ``b`` fit (see the module doc); ``{}`` (any
    value) absorbs everything."""
    if not a or not b:
        return {}
    merged: dict[str, Any] = {}
    types = set(_types(a)) | set(_types(b))
    if "object" in types:
        props: dict[str, Any] = {}
        left, right = a.get("properties") or {}, b.get("properties") or {}
        for key in [*left, *(k for k in right if k not in left)]:
            if key in left and key in right:
                props[key] = merge(left[key], right[key])
            elif len(props) < MAX_PROPERTIES:
                props[key] = dict(left.get(key) or right[key])
        merged["properties"] = props
    if "array" in types:
        items_a, items_b = a.get("items"), b.get("items")
        if items_a is not None and items_b is not None:
            merged["items"] = merge(items_a, items_b)
        elif items_a is not None or items_b is not None:
            merged["items"] = dict(items_a if items_a is not None else items_b)  # type: ignore[arg-type]
    return _with_types(merged, types)


def merge_all(events: Iterable[Any], start: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``start`` (a schema, or nothing yet) merged with each event's inferred schema."""
    schema: dict[str, Any] | None = dict(start) if start else None
    for event in events:
        inferred = infer(event)
        schema = inferred if schema is None else merge(schema, inferred)
    return schema or {}


def document(schema: Mapping[str, Any], title: str) -> dict[str, Any]:
    """``schema`` as a JSON Schema document to register (``$schema``, ``title`` added)."""
    return {"$schema": JSON_SCHEMA_DIALECT, "title": title, **schema}


def canonical(schema: Mapping[str, Any]) -> str:
    """A stable text of a schema (sorted keys): equal texts, equal shapes."""
    return json.dumps(schema, sort_keys=True, separators=(",", ":"))


def field_paths(schema: Mapping[str, Any], prefix: str = "") -> dict[str, list[str]]:
    """Every field of an object schema by dotted path, with its types: an array's element
    fields under the array's own path (``data.items.sku``), as event patterns match them."""
    paths: dict[str, list[str]] = {}

    def walk(node: Mapping[str, Any], path: str) -> None:
        types = _types(node)
        if path:
            kinds = [*paths.get(path, [])]
            for kind in types or ["any"]:
                if kind not in kinds:
                    kinds.append(kind)
            order = {kind: index for index, kind in enumerate(_TYPE_ORDER)}
            paths[path] = sorted(kinds, key=lambda kind: order.get(kind, len(order)))
        for key, child in (node.get("properties") or {}).items():
            walk(child, f"{path}.{key}" if path else key)
        items = node.get("items")
        if isinstance(items, Mapping):
            for key, child in (items.get("properties") or {}).items():
                walk(child, f"{path}.{key}" if path else key)

    walk(schema, prefix)
    return paths
