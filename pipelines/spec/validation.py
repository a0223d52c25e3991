"""Validate a channel spec (:func:`validate_spec`) and one stage's config
(:func:`parse_stage_config`) against the models and limits of :mod:`pipelines.spec.channel`
and each stage's plugin.

Errors are reported per field, with paths relative to the spec, so the builder can mark the
exact node: ``{"transforms[1].config.pattern": ["detail.state: ..."], "sink.type": [...]}``.
Validation collects every error of every stage; it never stops at the first one, except
past the size limits, where it reports the limit without validating what is over it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import (
    BaseModel,
    ValidationError,
)
from pydantic_core import ErrorDetails

from pipelines.spec.channel import (
    AVAILABLE_NOW_SOURCES,
    MAX_RULE_SINKS,
    MAX_RULES,
    MAX_SPEC_BYTES,
    MAX_STAGE_CONFIG_BYTES,
    MAX_TRANSFORMS,
    NOT_DEAD_LETTER_SINKS,
    NOT_RULE_SINKS,
    REAL_TIME_MIN_INTERVAL_SECONDS,
    REAL_TIME_REFUSED_TRANSFORMS,
    REAL_TIME_SINKS,
    REAL_TIME_SOURCES,
    REAL_TIME_TRANSFORMS,
    RULE_NAME_PATTERN,
    ChannelSpec,
    ErrorMap,
    ErrorPolicy,
    RuleSpec,
    RuntimeOptions,
    SpecError,
    StageSpec,
)
from pipelines.spec.patterns import PatternError, validate_pattern
from pipelines.spec.plugins import PluginKind, UnknownPluginError, get_plugin

_SPEC_FIELDS = tuple(ChannelSpec.model_fields)
_RULE_FIELDS = tuple(RuleSpec.model_fields)


def validate_spec(data: Any) -> ChannelSpec:
    """Validate a channel spec: its structure and every stage's config against its plugin.

    ``data`` is parsed JSON (a dict) or a :class:`ChannelSpec`. Returns a :class:`ChannelSpec`
    whose stage configs are normalized (defaults filled, JSON-ready). Raises
    :class:`SpecError` with every error found.
    """
    if isinstance(data, ChannelSpec):
        data = data.model_dump()
    if not isinstance(data, Mapping):
        raise SpecError({"": [f"must be an object with {', '.join(_SPEC_FIELDS)}"]})
    errors: ErrorMap = {}
    _check_size_limits(data, errors)
    if errors:  # not worth validating stage by stage
        raise SpecError(errors)
    for key in data:
        if key not in _SPEC_FIELDS:
            _add(errors, str(key), f"unknown field; expected one of: {', '.join(_SPEC_FIELDS)}")
    stages: dict[str, Any] = {}
    if "source" not in data:
        _add(errors, "source", "field required")
    else:
        stages["source"] = _checked_stage("source", data["source"], "source", errors)
    if "rules" in data and data["rules"] is not None:
        if data.get("sink") is not None:
            _add(errors, "sink", "a bus has rules instead of a sink: give one or the other")
        stages["rules"] = _checked_rules(data["rules"], errors)
    elif data.get("sink") is None:
        _add(errors, "sink", "field required (or rules, for a bus)")
    else:
        stages["sink"] = _checked_stage("sink", data["sink"], "sink", errors)
    stages["transforms"] = _checked_transforms(data.get("transforms", []), errors)
    if "errors" in data:
        stages["errors"] = _checked_error_policy(data["errors"], errors)
    if "runtime" in data:
        stages["runtime"] = _checked_runtime(data["runtime"], errors)
    if errors:
        raise SpecError(errors)
    spec = ChannelSpec.model_validate(stages)
    _check_mode(spec, errors)
    if errors:
        raise SpecError(errors)
    return spec


def parse_stage_config(kind: PluginKind, stage: StageSpec) -> BaseModel:
    """Return the typed config model of a stage.

    Raises :class:`SpecError` with paths relative to the stage (``"type"``,
    ``"config.topics"``) when the type is unknown or the config is invalid.
    """
    try:
        plugin = get_plugin(kind, stage.type)
    except UnknownPluginError as error:
        raise SpecError({"type": [str(error)]}) from None
    model = plugin.config_model
    try:
        return model.model_validate(stage.config)
    except ValidationError as error:
        known = tuple(model.model_fields)
        raise SpecError(_pydantic_errors(error.errors(), prefix="config", known=known)) from None


def _check_size_limits(data: Mapping[str, Any], errors: ErrorMap) -> None:
    """The whole spec's limits (see the module docstring); each stage's are checked with it."""
    size = _json_bytes(data)
    if size > MAX_SPEC_BYTES:
        _add(errors, "", f"is {size} bytes as JSON; the limit is {MAX_SPEC_BYTES}")
    transforms = data.get("transforms")
    if isinstance(transforms, list) and len(transforms) > MAX_TRANSFORMS:
        count = len(transforms)
        _add(errors, "transforms", f"has {count} transforms; the limit is {MAX_TRANSFORMS}")


def _checked_transforms(
    data: Any, errors: ErrorMap, loc: str = "transforms"
) -> list[StageSpec | None]:
    if not isinstance(data, list):
        _add(errors, loc, "must be a list of stages")
        return []
    if len(data) > MAX_TRANSFORMS:
        _add(errors, loc, f"has {len(data)} transforms; the limit is {MAX_TRANSFORMS}")
        return []
    return [
        _checked_stage("transform", stage, f"{loc}[{index}]", errors)
        for index, stage in enumerate(data)
    ]


def _checked_rules(data: Any, errors: ErrorMap) -> list[RuleSpec | None]:
    """A bus's rules, each checked where it is (``rules[2].sinks[0].config.topic``)."""
    if not isinstance(data, list):
        _add(errors, "rules", "must be a list of rules")
        return []
    if not data:
        _add(errors, "rules", "a bus needs at least one rule")
        return []
    if len(data) > MAX_RULES:
        _add(errors, "rules", f"has {len(data)} rules; the limit is {MAX_RULES}")
        return []
    named: dict[str, int] = {}
    rules = []
    for index, rule in enumerate(data):
        checked = _checked_rule(rule, f"rules[{index}]", errors)
        if checked is not None:
            if checked.name in named:
                _add(
                    errors,
                    f"rules[{index}].name",
                    f"rules[{named[checked.name]}] is named {checked.name!r} too; "
                    "rule names are unique in a bus",
                )
            named.setdefault(checked.name, index)
        rules.append(checked)
    return rules


def _checked_rule(data: Any, loc: str, errors: ErrorMap) -> RuleSpec | None:
    if not isinstance(data, Mapping):
        _add(errors, loc, 'must be an object like {"name": ..., "pattern": {...}, "sinks": [...]}')
        return None
    before = len(errors)
    for key in data:
        if key not in _RULE_FIELDS:
            expected = ", ".join(_RULE_FIELDS)
            _add(errors, f"{loc}.{key}", f"unknown field; expected one of: {expected}")
    pattern = data.get("pattern")
    if pattern is not None:
        try:
            validate_pattern(pattern)
        except PatternError as error:
            for message in error.messages:
                _add(errors, f"{loc}.pattern", message)
    transforms = _checked_transforms(data.get("transforms", []), errors, f"{loc}.transforms")
    sinks: list[StageSpec | None] = []
    raw_sinks = data.get("sinks")
    if raw_sinks is None:
        _add(errors, f"{loc}.sinks", "field required: the targets the rule sends to")
    elif not isinstance(raw_sinks, list) or not raw_sinks:
        _add(errors, f"{loc}.sinks", "must be a list of at least one sink stage")
    elif len(raw_sinks) > MAX_RULE_SINKS:
        count = len(raw_sinks)
        _add(errors, f"{loc}.sinks", f"has {count} sinks; the limit is {MAX_RULE_SINKS}")
    else:
        for index, stage in enumerate(raw_sinks):
            sink = _checked_stage("sink", stage, f"{loc}.sinks[{index}]", errors)
            if sink is not None and sink.type in NOT_RULE_SINKS:
                _add(
                    errors,
                    f"{loc}.sinks[{index}].type",
                    f"a {sink.type} sink shows a linear channel's output; a rule cannot send to it",
                )
            sinks.append(sink)
    fields = {k: v for k, v in data.items() if k in ("name", "description", "enabled")}
    name = fields.get("name")
    if isinstance(name, str) and not re.fullmatch(RULE_NAME_PATTERN, name):
        _add(
            errors,
            f"{loc}.name",
            f"{name[:70]!r}: use 1-63 lowercase letters, digits and dashes, starting and "
            "ending with a letter or a digit",
        )
        fields["name"] = "x"  # reported above; the rest is still checked
    try:
        head = RuleSpec.model_validate({**fields, "sinks": [StageSpec(type="-")]})
    except ValidationError as error:
        _merge(errors, _pydantic_errors(error.errors(), loc, _RULE_FIELDS))
        return None
    if len(errors) > before:
        return None
    return head.model_copy(update={"pattern": pattern, "transforms": transforms, "sinks": sinks})


def _checked_error_policy(data: Any, errors: ErrorMap) -> ErrorPolicy | None:
    if not isinstance(data, Mapping):
        _add(errors, "errors", 'must be an object like {"tolerance": "all", ...}')
        return None
    loc = "errors.dead_letter"
    dead_letter = data.get("dead_letter")
    checked = None
    if dead_letter is not None:
        checked = _checked_stage("sink", dead_letter, loc, errors)
        if checked is not None and checked.type in NOT_DEAD_LETTER_SINKS:
            _add(errors, f"{loc}.type", f"a {checked.type} sink cannot be the dead-letter target")
        if data.get("tolerance", "none") != "all":
            _add(errors, loc, "needs tolerance 'all' (with 'none' a bad event fails the channel)")
    try:
        policy = ErrorPolicy.model_validate({**data, "dead_letter": None})
    except ValidationError as error:
        _merge(errors, _pydantic_errors(error.errors(), "errors", tuple(ErrorPolicy.model_fields)))
        return None
    return policy.model_copy(update={"dead_letter": checked})


def _checked_runtime(data: Any, errors: ErrorMap) -> RuntimeOptions | None:
    if not isinstance(data, Mapping):
        _add(errors, "runtime", 'must be an object like {"isolation": "shared", ...}')
        return None
    try:
        options = RuntimeOptions.model_validate(data)
    except ValidationError as error:
        known = tuple(RuntimeOptions.model_fields)
        _merge(errors, _pydantic_errors(error.errors(), "runtime", known))
        return None
    if options.mode == "available-now" and options.interval_seconds is not None:
        _add(errors, "runtime.interval_seconds", "available-now runs without an interval")
    return options


def _check_mode(spec: ChannelSpec, errors: ErrorMap) -> None:
    """Refuse, at the field that prevents it, a mode the channel's stages cannot run in."""
    mode = spec.runtime.mode
    if mode == "available-now" and spec.source.type not in AVAILABLE_NOW_SOURCES:
        allowed = ", ".join(sorted(AVAILABLE_NOW_SOURCES))
        _add(
            errors,
            "source.type",
            f"a {spec.source.type} source has no end for available-now to reach "
            f"(available-now reads {allowed})",
        )
    if mode != "real-time":
        return
    why = "real-time mode runs stateless Kafka to Kafka channels"
    if spec.source.type not in REAL_TIME_SOURCES:
        _add(errors, "source.type", f"{why}; a {spec.source.type} source cannot run in it")
    if spec.rules is not None:
        _add(
            errors,
            "rules",
            f"{why} with one sink; a bus writes its rules' targets batch by batch "
            "(use micro-batch or available-now)",
        )
    elif spec.sink is not None and spec.sink.type not in REAL_TIME_SINKS:
        _add(errors, "sink.type", f"{why}; a {spec.sink.type} sink cannot run in it")
    elif spec.sink is not None and (spec.sink.config.get("retry") or {}).get("attempts", 1) > 1:
        _add(
            errors,
            "sink.config.retry.attempts",
            f"{why}; a retry policy retries micro-batch writes, which real-time mode has not "
            "(its Kafka producer retries by itself: use attempts 1, or micro-batch)",
        )
    for index, stage in enumerate(spec.transforms):
        if stage.type not in REAL_TIME_TRANSFORMS:
            reason = REAL_TIME_REFUSED_TRANSFORMS.get(stage.type, f"{stage.type} cannot run in it")
            _add(errors, f"transforms[{index}].type", f"{why}; {reason}")
    if spec.errors.tolerance == "all":
        _add(
            errors,
            "errors.tolerance",
            f"{why}; tolerance 'all' routes bad events per micro-batch, which real-time mode "
            "has not (use 'none')",
        )
    interval = spec.runtime.interval_seconds
    if interval is not None and interval < REAL_TIME_MIN_INTERVAL_SECONDS:
        _add(
            errors,
            "runtime.interval_seconds",
            f"real-time mode checkpoints at most every {REAL_TIME_MIN_INTERVAL_SECONDS:g} s "
            "(Spark's minimum batch duration)",
        )


def _checked_stage(kind: PluginKind, data: Any, loc: str, errors: ErrorMap) -> StageSpec | None:
    """Validate one stage into ``errors``; return it with a normalized config if valid."""
    if not isinstance(data, Mapping):
        _add(errors, loc, 'must be an object like {"type": ..., "config": {...}}')
        return None
    size = _json_bytes(data.get("config"))
    if size > MAX_STAGE_CONFIG_BYTES:
        _add(
            errors,
            f"{loc}.config",
            f"is {size} bytes as JSON; the limit is {MAX_STAGE_CONFIG_BYTES}",
        )
        return None
    try:
        stage = StageSpec.model_validate(data)
    except ValidationError as error:
        known = tuple(StageSpec.model_fields)
        _merge(errors, _pydantic_errors(error.errors(), prefix=loc, known=known))
        return None
    try:
        config = parse_stage_config(kind, stage)
    except SpecError as error:
        _merge(errors, {f"{loc}.{path}": messages for path, messages in error.errors.items()})
        return None
    return StageSpec(type=stage.type, config=config.model_dump(mode="json"))


def _pydantic_errors(
    details: Iterable[ErrorDetails], prefix: str, known: tuple[str, ...]
) -> ErrorMap:
    errors: ErrorMap = {}
    for detail in details:
        path = _join_loc(prefix, detail["loc"])
        messages = _messages(detail)
        if detail["type"] == "extra_forbidden" and len(detail["loc"]) == 1:
            messages = [f"unknown field; expected one of: {', '.join(known)}"]
        for message in messages:
            _add(errors, path, message)
    return errors


def _join_loc(prefix: str, loc: tuple[int | str, ...]) -> str:
    path = prefix
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


_MESSAGES = {
    "missing": "field required",
    "extra_forbidden": "unknown field",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "int_type": "must be an integer",
    "too_short": "must not be empty",
    "string_too_short": "must not be empty",
}


def _messages(detail: ErrorDetails) -> list[str]:
    """Readable messages for one pydantic error (a PatternError yields one per problem)."""
    context = detail.get("ctx") or {}
    error = context.get("error")
    if isinstance(error, PatternError):
        return error.messages
    if detail["type"] == "value_error" and error is not None:
        return [str(error)]
    if detail["type"] == "literal_error":
        return [f"must be {context.get('expected', 'one of the allowed values')}"]
    message = _MESSAGES.get(detail["type"])
    return [message or detail["msg"][:1].lower() + detail["msg"][1:]]


def _json_bytes(value: Any) -> int:
    """Size of ``value`` as compact UTF-8 JSON (what the API receives and the database keeps)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return len(text.encode("utf-8", errors="replace"))


def _add(errors: ErrorMap, path: str, message: str) -> None:
    errors.setdefault(path, []).append(message)


def _merge(errors: ErrorMap, more: ErrorMap) -> None:
    for path, messages in more.items():
        errors.setdefault(path, []).extend(messages)
