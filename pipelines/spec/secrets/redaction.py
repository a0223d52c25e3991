"""Secrets hidden and kept across edits: :func:`redact` for what leaves the console,
:func:`merge_secrets` for what comes back (a marker keeps the stored secret of the same
stage, while the address it is bound to, :func:`secret_binding`, is unchanged).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from pipelines.spec.channel import DEFAULT_RULE, SpecError
from pipelines.spec.secrets.finding import (
    MISSING,
    Loc,
    Schema,
    absent_secrets,
    as_json,
    config_model_of,
    distinct_strings,
    field_title,
    get_at,
    is_secret_field,
    json_copy,
    loc_path,
    model_defs,
    model_schema,
    same_stage,
    secret_locations,
    set_at,
    spec_stages,
    stage_of,
    union_branches,
    walk_secrets,
)

SECRET_MARKER = "__sluice_secret__"
"""Stands for a stored secret in anything the console returns, and in what clients send back."""


def secret_paths(spec: Mapping[str, Any] | BaseModel) -> list[str]:
    """Paths of the secrets set in ``spec`` (a channel spec, valid or not), in spec order."""
    return [loc_path(loc) for loc in secret_locations(as_json(spec), walk_secrets)]


def secret_values(spec: Mapping[str, Any] | BaseModel) -> list[str]:
    """The distinct non-empty string values of the secrets set in ``spec``."""
    data = as_json(spec)
    return distinct_strings(get_at(data, loc) for loc in secret_locations(data, walk_secrets))


def redact(spec: Mapping[str, Any] | BaseModel) -> dict[str, Any]:
    """A copy of ``spec`` with every secret that is set replaced by :data:`SECRET_MARKER`."""
    data = json_copy(spec)
    for loc in secret_locations(data, walk_secrets):
        set_at(data, loc, SECRET_MARKER)
    return data


SECRET_CHANGED_MARKER = "__sluice_secret_changed__"
"""Stands, in a comparison of two versions of a spec, for a secret the later one changed."""


def redact_against(
    spec: Mapping[str, Any] | BaseModel, earlier: Mapping[str, Any] | BaseModel | None
) -> dict[str, Any]:
    """:func:`redact` ``spec``, except that each secret whose value ``earlier`` (an earlier
    version of the spec, secrets in plaintext as ``spec``'s) does not hold anywhere reads as
    :data:`SECRET_CHANGED_MARKER`: a comparison tells that a secret changed, never what it
    is. (A secret moved from one stage to another reads unchanged.)"""
    data = json_copy(spec)
    known = set(secret_values(earlier)) if earlier is not None else set()
    for loc in secret_locations(data, walk_secrets):
        value = get_at(data, loc)
        changed = isinstance(value, str) and bool(value) and value not in known
        set_at(data, loc, SECRET_CHANGED_MARKER if changed else SECRET_MARKER)
    return data


def merge_secrets(new_spec: object, stored_spec: Mapping[str, Any] | BaseModel | None) -> Any:
    """Return ``new_spec`` (a copy) with the secrets it keeps taken from ``stored_spec``.

    A secret sent as :data:`SECRET_MARKER`, or a secret field left out of an object whose
    model declares it, takes the stored value at the same path, provided the stage at that
    position has the same type in both specs and the same :func:`secret_binding`. Inside a
    bus the position is taken within the stored rule of the same ``name``, so reordering,
    inserting or removing rules keeps every rule's secrets; a renamed rule keeps none.
    Everything else is returned as sent (validate the result afterwards); a ``new_spec``
    that is not an object is returned unchanged.

    Raises :class:`SpecError` for a marker with no stored secret to keep (a new channel, a
    stage moved or retyped): saving the marker itself as the secret would be wrong; and for
    a marker or a left-out secret whose stage now points somewhere else (its binding
    changed): the secret must be entered again, or sent as ``null`` to clear it.
    """
    if not isinstance(new_spec, Mapping):
        return new_spec
    merged = copy.deepcopy(dict(new_spec))
    stored = _rules_by_name(as_json(stored_spec) if stored_spec is not None else {}, merged)
    kept: dict[Loc, Any] = {}
    rebound: dict[Loc, str] = {}
    changes = _BindingChanges(merged, stored)
    for loc in secret_locations(stored, walk_secrets):
        if not same_stage(merged, stored, loc):
            continue
        changed = changes.of(loc)
        if changed:
            rebound[loc] = (
                f"re-enter the {changes.title(loc)}: the address it authenticates to "
                f"changed ({', '.join(changed)})"
            )
        else:
            kept[loc] = get_at(stored, loc)
    errors: dict[str, list[str]] = {}
    for loc in secret_locations(merged, walk_secrets):
        if get_at(merged, loc) != SECRET_MARKER:
            continue
        if loc in kept:
            set_at(merged, loc, kept[loc])
        elif loc in rebound:
            errors[loc_path(loc)] = [rebound[loc]]
        else:
            errors[loc_path(loc)] = [
                f"{SECRET_MARKER!r} keeps a stored secret, and there is none here to keep; "
                "send the secret itself"
            ]
    for loc in secret_locations(merged, absent_secrets):
        if loc in kept:
            set_at(merged, loc, kept[loc])
        elif loc in rebound:
            errors[loc_path(loc)] = [f"{rebound[loc]}; or send null to remove it"]
    if errors:
        raise SpecError(errors)
    return merged


def _rules_by_name(stored: Any, new: Mapping[str, Any]) -> Any:
    """``stored`` with its rules placed where ``new`` has the rules of the same name.

    A bus's rule is known by its name, not its place: rules reordered, inserted or removed
    keep their stages' secrets, and a rule named anew (or a new rule) keeps none. So the
    position-by-position comparison of :func:`merge_secrets` compares each new rule with
    the stored rule of its name (``None`` where there is none). Inside a rule, stages are
    compared by position, as the channel's own transforms are.

    A linear channel is a bus of one rule named ``default`` (``ChannelSpec.branches``): a
    linear channel made a bus keeps its sink's secrets in the first sink of its rule
    ``default``, and a bus made linear keeps, in its sink, those of that rule's first sink.
    """
    if not isinstance(stored, Mapping):
        return stored
    new_rules = new.get("rules")
    stored_rules = stored.get("rules")
    if not isinstance(new_rules, list):
        if not isinstance(stored_rules, list) or new.get("sink") is None:
            return stored
        default = _rules_named(stored_rules).get(DEFAULT_RULE)
        sinks = default.get("sinks") if isinstance(default, Mapping) else None
        sink = sinks[0] if isinstance(sinks, list) and sinks else None
        return {**{k: v for k, v in stored.items() if k != "rules"}, "sink": sink}
    if not isinstance(stored_rules, list):
        sink = stored.get("sink")
        stored_rules = [] if sink is None else [{"name": DEFAULT_RULE, "sinks": [sink]}]
    named = _rules_named(stored_rules)
    aligned = [
        named.pop(rule["name"], None)
        if isinstance(rule, Mapping) and isinstance(rule.get("name"), str)
        else None
        for rule in new_rules
    ]
    return {**{k: v for k, v in stored.items() if k != "sink"}, "rules": aligned}


def _rules_named(rules: list[Any]) -> dict[str, Any]:
    """The rules of a list by name (the first of a name, should it repeat)."""
    named: dict[str, Any] = {}
    for rule in rules:
        if isinstance(rule, Mapping) and isinstance(rule.get("name"), str):
            named.setdefault(rule["name"], rule)
    return named


def secret_binding(model: type[BaseModel], config: Any) -> dict[str, Any]:
    """Where the secrets of one stage's ``config`` (raw JSON, valid or not) go.

    ``model.secret_binding(config)`` when the model declares it: a few named values, each
    normalised so that a change that keeps the address (the case of a host name, a default
    port written out, another path) keeps the binding. Without a declaration: every setting
    of the stage but its secrets, defaults filled in, so that any other change drops the
    stored secrets (it fails closed). Raises ``TypeError``, ``ValueError``, ``KeyError`` or
    ``AttributeError`` when ``config`` is too malformed to read a binding from.
    """
    if not isinstance(config, Mapping):
        raise TypeError("a stage config is an object")
    declared = getattr(model, "secret_binding", None)
    return dict(declared(config)) if callable(declared) else _settings(model, config)


def redact_config(model: type[BaseModel], config: Any) -> Any:
    """A copy of one stage's ``config`` with its secrets replaced by :data:`SECRET_MARKER`."""
    config = copy.deepcopy(config)
    for loc in dict.fromkeys(walk_secrets(model_schema(model), config, (), model_defs(model))):
        set_at(config, loc, SECRET_MARKER)
    return config


def config_secret_values(model: type[BaseModel], config: Any) -> list[str]:
    """The distinct non-empty string values of the secrets set in one stage's ``config``."""
    found = walk_secrets(model_schema(model), config, (), model_defs(model))
    return distinct_strings(get_at(config, loc) for loc in found)


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of each secret replaced by :data:`SECRET_MARKER`.

    For text that may quote a secret: validation messages, a driver's error trace. Longer
    secrets are replaced first, so one that contains another is hidden whole.
    """
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, SECRET_MARKER)
    return text


# -- bindings ----------------------------------------------------------------------------

_UNREADABLE = (TypeError, ValueError, KeyError, AttributeError)


def _settings(model: type[BaseModel], config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with the model's defaults filled in (top level), without its secrets."""
    filled = dict(config)
    for name, field in model.model_fields.items():
        if name not in filled and not field.is_required():
            filled[name] = to_jsonable_python(field.get_default(call_default_factory=True))
    return _fields_without_secrets(model_schema(model), filled, model_defs(model))


def _whole(model: type[BaseModel], config: Any) -> Any:
    return _settings(model, config) if isinstance(config, Mapping) else config


def _fields_without_secrets(
    schema: Schema, value: Mapping[str, Any], defs: Schema
) -> dict[str, Any]:
    """A copy of the object ``value`` without the fields ``schema`` (any branch) calls secret."""
    branches = union_branches(schema, defs)
    fields: dict[str, Schema] = {}
    for branch in branches:
        fields.update(branch.get("properties", {}))
    extra = next(
        (
            b["additionalProperties"]
            for b in branches
            if isinstance(b.get("additionalProperties"), Mapping)
        ),
        None,
    )
    result = {}
    for key, item in value.items():
        field = fields.get(key, extra)
        if field is None:
            result[key] = item
        elif not is_secret_field(field, defs):
            result[key] = _without_secrets(field, item, defs)
    return result


def _without_secrets(schema: Schema, value: Any, defs: Schema) -> Any:
    """A copy of ``value`` without the fields ``schema`` (any branch) calls secret."""
    if isinstance(value, Mapping):
        return _fields_without_secrets(schema, value, defs)
    branches = union_branches(schema, defs)
    items = next((b["items"] for b in branches if isinstance(b.get("items"), Mapping)), None)
    if isinstance(value, list) and items is not None:
        return [_without_secrets(items, item, defs) for item in value]
    return value


class _BindingChanges:
    """What changed in the binding of each stored stage, between a stored spec and a new one
    (the stages compared are at the same position and of the same type)."""

    def __init__(self, new: Any, stored: Any) -> None:
        self.new, self.stored = new, stored
        self.models = {
            stage_loc: config_model_of(kind, stage)
            for stage_loc, kind, stage in spec_stages(stored)
        }
        self._changed: dict[Loc, list[str]] = {}

    def of(self, loc: Loc) -> list[str]:
        """The names of the binding values that differ for the stage holding ``loc``."""
        stage_loc = stage_of(loc)
        if stage_loc not in self._changed:
            self._changed[stage_loc] = self._compare(stage_loc)
        return self._changed[stage_loc]

    def title(self, loc: Loc) -> str:
        """The secret's field title as a sentence names it ("password", "SASL password")."""
        stage_loc = stage_of(loc)
        model = self.models.get(stage_loc)
        found = (
            None
            if model is None
            else field_title(model_schema(model), loc[len(stage_loc) + 1 :], model_defs(model))
        )
        title = found or str(loc[-1])
        return title[0].lower() + title[1:] if title[1:2].islower() else title

    def _compare(self, stage_loc: Loc) -> list[str]:
        model = self.models.get(stage_loc)
        if model is None:
            return ["type"]
        stored = get_at(self.stored, (*stage_loc, "config"))
        new = get_at(self.new, (*stage_loc, "config"))
        try:
            before, after = secret_binding(model, stored), secret_binding(model, new)
        except _UNREADABLE:  # an invalid config: only the same settings keep the secrets
            before, after = {"config": _whole(model, stored)}, {"config": _whole(model, new)}
        names = dict.fromkeys([*before, *after])
        return [name for name in names if before.get(name, MISSING) != after.get(name, MISSING)]
