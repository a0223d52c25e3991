"""JSON Schema: validated against its draft's metaschema by ``jsonschema``; compatibility by
the rules Confluent documents for JSON Schema (a reader must accept every document the
writer accepts), as far as they are structural:

* types may widen (``integer`` → ``number``, a type added), not narrow or change;
* a closed content model (``additionalProperties: false``) may not lose a property; a
  property may be added to it unless required without a default;
* an open content model (the default) may lose a property, and may gain one only if the new
  property accepts anything (Confluent's ``PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL``: the old
  writer could have put any value under that name);
* a required property may not be added (unless it has a default); enums may grow, not
  shrink; length, size and range limits may loosen, not tighten; a pattern may not change;
* ``items``, ``properties`` and ``additionalProperties`` schemas, and local ``$ref``
  (``#/definitions/…``, ``#/$defs/…``), are checked recursively.

``oneOf``/``anyOf``/``allOf`` are compared branch by branch when both sides have as many
branches, and must otherwise be equal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema.exceptions
import jsonschema.validators

from console.schemas.base import JSON, InvalidSchema, ParsedSchema, check_schema_depth


def parse(text: str, references: Mapping[str, str]) -> ParsedSchema:
    check_schema_depth(text)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidSchema(f"Invalid schema: not JSON: {exc}") from exc
    if not isinstance(data, dict | bool):
        raise InvalidSchema("Invalid schema: a JSON Schema is an object or a boolean")
    try:
        jsonschema.validators.validator_for(data).check_schema(data)
    except jsonschema.exceptions.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "(root)"
        raise InvalidSchema(f"Invalid schema at {where}: {exc.message}") from exc
    for name, ref_text in references.items():
        check_schema_depth(ref_text)
        try:
            json.loads(ref_text)
        except ValueError as exc:
            raise InvalidSchema(f"Invalid reference {name!r}: not JSON") from exc
    canonical = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return ParsedSchema(JSON, canonical, data)


def check(reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
    """Why a document valid under ``writer`` may be refused by ``reader``; empty if none."""
    return _Checker(reader.parsed, writer.parsed).compare(reader.parsed, writer.parsed, "#")


_LIMITS_MAX = ("maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum")
_LIMITS_MIN = ("minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum")
_COMBINERS = ("oneOf", "anyOf", "allOf")


def _types(schema: dict[str, Any]) -> set[str] | None:
    declared = schema.get("type")
    if declared is None:
        return None
    return {declared} if isinstance(declared, str) else set(declared)


class _Checker:
    def __init__(self, reader_root: Any, writer_root: Any) -> None:
        self.roots = (reader_root, writer_root)
        self.seen: set[tuple[int, int]] = set()

    def _resolve(self, schema: Any, root: Any) -> Any:
        for _ in range(32):  # a chain of local $refs, never an endless one
            if not (isinstance(schema, dict) and isinstance(schema.get("$ref"), str)):
                return schema
            ref = schema["$ref"]
            if not ref.startswith("#"):
                return schema  # external: compared by name below
            node: Any = root
            for part in [p for p in ref[1:].split("/") if p]:
                part = part.replace("~1", "/").replace("~0", "~")
                if not isinstance(node, dict) or part not in node:
                    return schema
                node = node[part]
            schema = node
        return schema

    def compare(self, reader: Any, writer: Any, path: str) -> list[str]:
        reader = self._resolve(reader, self.roots[0])
        writer = self._resolve(writer, self.roots[1])
        key = (id(reader), id(writer))
        if key in self.seen:
            return []
        self.seen.add(key)
        if reader is True or reader == {}:
            return []
        if writer is False:
            return []
        if reader is False:
            return [f"SCHEMA_NARROWED at {path}: the new reader accepts nothing"]
        if writer is True:
            writer = {}
        if "$ref" in reader or "$ref" in writer:
            if reader.get("$ref") != writer.get("$ref"):
                return [f"REFERENCE_CHANGED at {path}"]
            return []
        out: list[str] = []
        out += self._type(reader, writer, path)
        out += self._enum(reader, writer, path)
        out += self._limits(reader, writer, path)
        out += self._object(reader, writer, path)
        out += self._array(reader, writer, path)
        out += self._combined(reader, writer, path)
        return out

    def _type(self, reader: dict, writer: dict, path: str) -> list[str]:
        r, w = _types(reader), _types(writer)
        if r is None:
            return []
        if w is None:
            return [f"TYPE_NARROWED at {path}: now {sorted(r)}, was any type"]
        widened = r | ({"integer"} if "number" in r else set())
        missing = w - widened
        if not missing:
            return []
        kind = "TYPE_NARROWED" if r & w else "TYPE_CHANGED"
        return [f"{kind} at {path}: now {sorted(r)}, was {sorted(w)}"]

    def _enum(self, reader: dict, writer: dict, path: str) -> list[str]:
        out = []
        if "enum" in reader:
            if "enum" not in writer:
                out.append(f"ENUM_ARRAY_NARROWED at {path}: an enum was added")
            elif any(v not in reader["enum"] for v in writer["enum"]):
                out.append(f"ENUM_ARRAY_NARROWED at {path}")
        if "const" in reader and writer.get("const", object()) != reader["const"]:
            out.append(f"CONST_CHANGED at {path}")
        if "pattern" in reader and reader["pattern"] != writer.get("pattern"):
            out.append(f"PATTERN_CHANGED at {path}")
        return out

    def _limits(self, reader: dict, writer: dict, path: str) -> list[str]:
        out = []
        for name in _LIMITS_MAX:
            if name in reader and (name not in writer or writer[name] > reader[name]):
                out.append(f"{_snake(name).upper()}_DECREASED at {path}")
        for name in _LIMITS_MIN:
            if name in reader and (name not in writer or writer[name] < reader[name]):
                out.append(f"{_snake(name).upper()}_INCREASED at {path}")
        return out

    def _object(self, reader: dict, writer: dict, path: str) -> list[str]:
        r_props: dict = reader.get("properties", {}) or {}
        w_props: dict = writer.get("properties", {}) or {}
        if not (r_props or w_props or "required" in reader or "additionalProperties" in reader):
            return []
        out: list[str] = []
        r_extra = reader.get("additionalProperties", True)
        w_extra = writer.get("additionalProperties", True)
        for name, w_schema in w_props.items():
            where = f"{path}/properties/{name}"
            if name in r_props:
                out += self.compare(r_props[name], w_schema, where)
            elif r_extra is False:
                out.append(f"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL at {where}")
            elif isinstance(r_extra, dict):
                out += self.compare(r_extra, w_schema, where)
        w_required = set(writer.get("required", []) or [])
        for name, r_schema in r_props.items():
            if name in w_props:
                continue
            where = f"{path}/properties/{name}"
            has_default = isinstance(r_schema, dict) and "default" in r_schema
            if name in (reader.get("required") or []) and not has_default:
                out.append(f"REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL at {where}")
            elif w_extra is False:
                continue  # the writer never wrote it
            elif isinstance(w_extra, dict):
                out += self.compare(r_schema, w_extra, where)
            elif self.compare(r_schema, {}, where):
                out.append(f"PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL at {where}")
        for name in sorted(set(reader.get("required", []) or []) - w_required):
            if name in w_props and not (
                isinstance(r_props.get(name), dict) and "default" in r_props[name]
            ):
                out.append(f"REQUIRED_ATTRIBUTE_ADDED at {path}/required/{name}")
        if r_extra is False and w_extra is not False:
            out.append(f"ADDITIONAL_PROPERTIES_REMOVED at {path}")
        elif isinstance(r_extra, dict) and isinstance(w_extra, dict):
            out += self.compare(r_extra, w_extra, f"{path}/additionalProperties")
        elif isinstance(r_extra, dict) and w_extra is True and self.compare(r_extra, {}, path):
            out.append(f"ADDITIONAL_PROPERTIES_NARROWED at {path}")
        return out

    def _array(self, reader: dict, writer: dict, path: str) -> list[str]:
        r_items, w_items = reader.get("items"), writer.get("items")
        if r_items is None or isinstance(r_items, list) or isinstance(w_items, list):
            if isinstance(r_items, list) and r_items != w_items:
                return [f"ITEMS_CHANGED at {path}/items"]
            return []
        return self.compare(r_items, {} if w_items is None else w_items, f"{path}/items")

    def _combined(self, reader: dict, writer: dict, path: str) -> list[str]:
        out: list[str] = []
        for name in _COMBINERS:
            r, w = reader.get(name), writer.get(name)
            if r is None:
                continue
            if not isinstance(w, list) or len(w) != len(r):
                if r != w:
                    out.append(f"COMBINED_TYPE_CHANGED at {path}/{name}")
                continue
            for i, (r_branch, w_branch) in enumerate(zip(r, w, strict=True)):
                out += self.compare(r_branch, w_branch, f"{path}/{name}/{i}")
        return out


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)
