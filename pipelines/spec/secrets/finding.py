"""Where the secrets of a channel spec are: each stage's config read as its plugin's JSON
Schema reads it (a field typed ``Secret`` is ``"writeOnly": true``), at any depth the
schema describes, in specs valid or not; and the locations (``Loc``) they are found at.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from pydantic import BaseModel

from pipelines.spec.plugins import PluginKind, UnknownPluginError, get_plugin

Loc = tuple[str | int, ...]
Schema = Mapping[str, Any]


Finder = Callable[[Schema, Any, Loc, Schema], Iterator[Loc]]


def secret_locations(spec: Any, finder: Finder) -> list[Loc]:
    """Locations ``finder`` (:func:`walk_secrets` or :func:`absent_secrets`) finds in each
    stage's config."""
    found: dict[Loc, None] = {}
    for stage_loc, kind, stage in spec_stages(spec):
        model = config_model_of(kind, stage)
        if model is not None:
            loc = (*stage_loc, "config")
            config = stage.get("config")
            found.update(dict.fromkeys(finder(model_schema(model), config, loc, model_defs(model))))
    return list(found)


def spec_stages(spec: Any) -> Iterator[tuple[Loc, PluginKind, Any]]:
    if not isinstance(spec, Mapping):
        return
    yield ("source",), "source", spec.get("source")
    transforms = spec.get("transforms")
    if isinstance(transforms, list):
        for index, stage in enumerate(transforms):
            yield ("transforms", index), "transform", stage
    if spec.get("sink") is not None or not isinstance(spec.get("rules"), list):
        yield ("sink",), "sink", spec.get("sink")
    rules = spec.get("rules")
    if isinstance(rules, list):
        for rule_index, rule in enumerate(rules):
            if not isinstance(rule, Mapping):
                continue
            rule_transforms = rule.get("transforms")
            if isinstance(rule_transforms, list):
                for index, stage in enumerate(rule_transforms):
                    yield ("rules", rule_index, "transforms", index), "transform", stage
            sinks = rule.get("sinks")
            if isinstance(sinks, list):
                for index, stage in enumerate(sinks):
                    yield ("rules", rule_index, "sinks", index), "sink", stage
    errors = spec.get("errors")
    if isinstance(errors, Mapping):
        yield ("errors", "dead_letter"), "sink", errors.get("dead_letter")


def config_model_of(kind: PluginKind, stage: Any) -> type[BaseModel] | None:
    if not isinstance(stage, Mapping) or not isinstance(stage.get("type"), str):
        return None
    try:
        return get_plugin(kind, stage["type"]).config_model
    except UnknownPluginError:
        return None


def walk_secrets(schema: Schema, value: Any, loc: Loc, defs: Schema) -> Iterator[Loc]:
    """Yield the location of each secret set in ``value`` as ``schema`` reads it.

    Every branch of ``anyOf`` / ``oneOf`` / ``allOf`` is followed: a value that any branch
    calls secret is treated as one (hiding too much is safe; too little is not).
    """
    schema = resolve_ref(schema, defs)
    if schema.get("writeOnly") is True:
        if value is not None:
            yield loc
        return
    for keyword in _BRANCHES:
        for branch in schema.get(keyword, ()):
            yield from walk_secrets(branch, value, loc, defs)
    if isinstance(value, Mapping):
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if key in properties:
                yield from walk_secrets(properties[key], item, (*loc, key), defs)
            elif isinstance(extra, Mapping):
                yield from walk_secrets(extra, item, (*loc, key), defs)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            yield from walk_secrets(schema["items"], item, (*loc, index), defs)


def absent_secrets(schema: Schema, value: Any, loc: Loc, defs: Schema) -> Iterator[Loc]:
    """Yield the location of each secret field that an object in ``value`` declares but lacks.

    Only branches of a union that ``value`` fits are followed, so a secret of another variant
    is never added to an object.
    """
    schema = resolve_ref(schema, defs)
    for keyword in _BRANCHES:
        for branch in schema.get(keyword, ()):
            if _fits(branch, value, defs):
                yield from absent_secrets(branch, value, loc, defs)
    if isinstance(value, Mapping):
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, field in properties.items():
            if key in value:
                yield from absent_secrets(field, value[key], (*loc, key), defs)
            elif is_secret_field(field, defs):
                yield (*loc, key)
        if isinstance(extra, Mapping):
            for key, item in value.items():
                if key not in properties:
                    yield from absent_secrets(extra, item, (*loc, key), defs)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            yield from absent_secrets(schema["items"], item, (*loc, index), defs)


_BRANCHES = ("anyOf", "oneOf", "allOf")
_JSON_TYPES = {"object": Mapping, "array": list, "string": str, "boolean": bool}


def union_branches(schema: Schema, defs: Schema) -> list[Schema]:
    """``schema`` resolved, and every branch of its unions at any depth, resolved."""
    schema = resolve_ref(schema, defs)
    found = [schema]
    for keyword in _BRANCHES:
        for branch in schema.get(keyword, ()):
            found += union_branches(branch, defs)
    return found


def is_secret_field(schema: Schema, defs: Schema) -> bool:
    """Whether a field's schema is a secret, possibly optional (``Secret | None``)."""
    schema = resolve_ref(schema, defs)
    if schema.get("writeOnly") is True:
        return True
    return any(is_secret_field(branch, defs) for k in _BRANCHES for branch in schema.get(k, ()))


def _fits(schema: Schema, value: Any, defs: Schema) -> bool:
    """A cheap check that ``value`` may be of this union branch (type, fields, constants)."""
    schema = resolve_ref(schema, defs)
    expected = _JSON_TYPES.get(schema.get("type", ""))
    if schema.get("type") == "null":
        return value is None
    if expected is not None and not isinstance(value, expected):
        return False
    if not isinstance(value, Mapping):
        return True
    properties = schema.get("properties", {})
    if schema.get("additionalProperties") is False and not set(value) <= set(properties):
        return False
    for key, field in properties.items():
        field = resolve_ref(field, defs)
        if key in value and "const" in field and value[key] != field["const"]:
            return False
        if key in value and "enum" in field and value[key] not in field["enum"]:
            return False
    return True


def resolve_ref(schema: Schema, defs: Schema) -> Schema:
    seen: set[str] = set()
    while isinstance(schema.get("$ref"), str) and schema["$ref"] not in seen:
        seen.add(schema["$ref"])
        schema = defs.get(schema["$ref"].rpartition("/")[2], {})
    return schema


def field_title(schema: Schema, loc: Loc, defs: Schema) -> str | None:
    """The title ``schema`` gives the field at ``loc`` (following ``$ref`` and unions)."""
    for part in loc:
        found: Schema | None = None
        for branch in union_branches(schema, defs):
            if isinstance(part, str) and part in branch.get("properties", {}):
                found = branch["properties"][part]
                break
        if found is None:
            return None  # a dict entry or a list item: named by its key
        schema = found
    title = schema.get("title") or resolve_ref(schema, defs).get("title")
    return title if isinstance(title, str) and title else None


@functools.cache
def model_schema(model: type[BaseModel]) -> Schema:
    return model.model_json_schema()


def model_defs(model: type[BaseModel]) -> Schema:
    defs: Schema = model_schema(model).get("$defs", {})  # JSON Schema: "$defs" is an object
    return defs


# -- locations ---------------------------------------------------------------------------

MISSING = object()


def get_at(data: Any, loc: Loc) -> Any:
    for part in loc:
        if isinstance(part, int):
            if not isinstance(data, list) or part >= len(data):
                return MISSING
        elif not isinstance(data, Mapping) or part not in data:
            return MISSING
        data = data[part]
    return data


def set_at(data: Any, loc: Loc, value: Any) -> None:
    parent = get_at(data, loc[:-1])
    parent[loc[-1]] = value


def stage_of(loc: Loc) -> Loc:
    """The location of the stage that holds ``loc`` (``("sink",)``, ``("transforms", 1)``,
    ``("rules", 0, "sinks", 1)``)."""
    if loc[0] == "rules":
        return loc[:4]
    return loc[:2] if loc[0] in ("transforms", "errors") else loc[:1]


def same_stage(new: Any, stored: Any, loc: Loc) -> bool:
    """Whether the stage holding ``loc`` has the same type in both specs (its position is
    the one in ``loc``: a stage moved elsewhere is another stage)."""
    stage_loc = stage_of(loc)
    new_stage, stored_stage = get_at(new, stage_loc), get_at(stored, stage_loc)
    return (
        isinstance(new_stage, Mapping)
        and isinstance(stored_stage, Mapping)
        and new_stage.get("type") == stored_stage.get("type")
    )


def loc_path(loc: Loc) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else part)
    return path


def distinct_strings(values: Iterable[Any]) -> list[str]:
    return list(dict.fromkeys(v for v in values if isinstance(v, str) and v))


def as_json(spec: Mapping[str, Any] | BaseModel) -> Any:
    """``spec`` as JSON data. Any: a spec read from storage may be anything (``None``, a
    list); the walks skip what is not an object, and such a spec comes back unchanged."""
    return spec.model_dump(mode="json") if isinstance(spec, BaseModel) else spec


def json_copy(spec: Mapping[str, Any] | BaseModel) -> dict[str, Any]:
    """A deep copy of ``spec`` as JSON data, to change (a dict for every valid spec)."""
    data: dict[str, Any] = copy.deepcopy(as_json(spec))
    return data
