"""The channel spec (source -> transforms -> sink) and its validation.

Errors are reported per field, with paths relative to the spec, so the builder can mark the
exact node: ``{"transforms[1].config.pattern": ["detail.state: ..."], "sink.type": [...]}``.
Validation collects every error of every stage; it never stops at the first one, except
past the size limits below, where it reports the limit without validating what is over it.

Size limits (so saving, storing and deploying a spec stays cheap: 10,000 transforms once took
2.5 s to save), each a field error at the path it concerns:

=========================== ========= ===================================================
limit                       value     error at
=========================== ========= ===================================================
``MAX_SPEC_BYTES``          256 KiB   ``""`` (the spec), its compact JSON in UTF-8
``MAX_TRANSFORMS``          50        ``transforms``
``MAX_STAGE_CONFIG_BYTES``  64 KiB    ``<stage>.config``, its compact JSON in UTF-8
``MAX_STAGE_TYPE_LENGTH``   64        ``<stage>.type``
=========================== ========= ===================================================
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from pipelines.spec.patterns import PatternError
from pipelines.spec.plugins import PluginKind, UnknownPluginError, get_plugin, plugin_types

ErrorMap = dict[str, list[str]]

MAX_SPEC_BYTES = 256 * 1024
"""The largest spec, as compact UTF-8 JSON."""
MAX_TRANSFORMS = 50
"""The most transforms one channel chains."""
MAX_STAGE_CONFIG_BYTES = 64 * 1024
"""The largest config of one stage (source, transform, sink, dead letter), as compact JSON."""
MAX_STAGE_TYPE_LENGTH = 64
"""The longest plugin type name a stage may give."""


class StageSpec(BaseModel):
    """One stage: a plugin ``type`` and its ``config`` object."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(max_length=MAX_STAGE_TYPE_LENGTH)
    config: dict[str, Any] = Field(default_factory=dict)


class ErrorPolicy(BaseModel):
    """What the channel does with an event a stage cannot handle (Kafka Connect's
    ``errors.tolerance`` / ``errors.deadletterqueue.*`` / ``errors.log.enable``)."""

    model_config = ConfigDict(extra="forbid")

    tolerance: Literal["none", "all"] = Field(
        "none",
        description=(
            "none: the first bad event fails the channel, with the event's context in the "
            "trace. all: bad events are counted, logged if asked, sent to the dead-letter "
            "target if there is one, and the channel keeps running."
        ),
    )
    dead_letter: StageSpec | None = Field(
        None,
        description=(
            "A sink stage that receives bad events as CloudEvents of type "
            "sluice.deadletter with their context (needs tolerance all)."
        ),
    )
    log: bool = Field(False, description="Log each bad event (with its context) in the driver log.")


ExecutionMode = Literal["micro-batch", "real-time", "available-now"]
Isolation = Literal["shared", "dedicated"]

MIN_INTERVAL_SECONDS = 0.1
MAX_INTERVAL_SECONDS = 86_400.0

REAL_TIME_SOURCES = frozenset({"kafka"})
REAL_TIME_SINKS = frozenset({"kafka"})
REAL_TIME_TRANSFORMS = frozenset(plugin_types("transform"))
"""Every built-in transform is stateless (each maps one event to at most one, with no state
across events), so real-time mode runs them all; a stateful one would be left out here."""
REAL_TIME_MIN_INTERVAL_SECONDS = 5.0
"""Spark's ``spark.sql.streaming.realTimeMode.minBatchDuration``."""
AVAILABLE_NOW_SOURCES = frozenset({"kafka", "http", "files"})
"""Sources with an end to reach: a Kafka topic's (or an ingest topic's) end offsets as the run
starts, the files present then. A generator never runs out."""


class RuntimeOptions(BaseModel):
    """How the runtime runs the channel: in which driver, in which execution mode."""

    model_config = ConfigDict(extra="forbid")

    isolation: Isolation = Field(
        "shared",
        description=(
            "shared: the channel's query runs in a long-lived Spark driver beside other "
            "channels (starts in about a second, costs little). dedicated: a Spark driver of "
            "its own (a JVM per channel: for heavy or risky channels)."
        ),
    )
    mode: ExecutionMode = Field(
        "micro-batch",
        description=(
            "micro-batch: batches one after another (or every interval_seconds). real-time: "
            "Spark's real-time mode, the lowest latency, for stateless Kafka to Kafka channels; "
            "it holds one core per source partition while it runs. available-now: process "
            "what the source holds when the run starts, then stop (a backfill)."
        ),
    )
    interval_seconds: float | None = Field(
        None,
        ge=MIN_INTERVAL_SECONDS,
        le=MAX_INTERVAL_SECONDS,
        description=(
            "micro-batch: start a batch at most this often (none: as soon as the previous one "
            "ends and events wait). real-time: how often progress is checkpointed (default 60, "
            "at least 5); a stop replays at most this much."
        ),
    )


class ChannelSpec(BaseModel):
    """A channel: one source, an ordered chain of transforms, one sink, an error policy, and
    how the runtime runs it."""

    model_config = ConfigDict(extra="forbid")

    source: StageSpec
    transforms: list[StageSpec] = Field(default_factory=list, max_length=MAX_TRANSFORMS)
    sink: StageSpec
    errors: ErrorPolicy = Field(default_factory=ErrorPolicy)
    runtime: RuntimeOptions = Field(default_factory=RuntimeOptions)


class SpecError(ValueError):
    """A spec (or one stage config) is invalid.

    ``errors`` maps a field path to its messages, e.g. ``"source.config.topics"``,
    ``"transforms[0].config.pattern"``, ``"sink.type"``; ``""`` is the spec itself.
    """

    def __init__(self, errors: Mapping[str, list[str]]) -> None:
        self.errors: ErrorMap = {path: list(messages) for path, messages in errors.items()}
        summary = "; ".join(
            f"{path or 'spec'}: {message}"
            for path, messages in self.errors.items()
            for message in messages
        )
        super().__init__(f"invalid channel spec: {summary}")


_SPEC_FIELDS = tuple(ChannelSpec.model_fields)
_STAGE_KINDS: tuple[tuple[str, PluginKind], ...] = (("source", "source"), ("sink", "sink"))


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
    for field, kind in _STAGE_KINDS:
        if field not in data:
            _add(errors, field, "field required")
        else:
            stages[field] = _checked_stage(kind, data[field], field, errors)
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


def _checked_transforms(data: Any, errors: ErrorMap) -> list[StageSpec | None]:
    if not isinstance(data, list):
        _add(errors, "transforms", "must be a list of stages")
        return []
    return [
        _checked_stage("transform", stage, f"transforms[{index}]", errors)
        for index, stage in enumerate(data)
    ]


NOT_DEAD_LETTER_SINKS = ("preview",)
"""Sinks that cannot take dead letters (the live tail shows a channel's output only)."""


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
    if spec.sink.type not in REAL_TIME_SINKS:
        _add(errors, "sink.type", f"{why}; a {spec.sink.type} sink cannot run in it")
    for index, stage in enumerate(spec.transforms):
        if stage.type not in REAL_TIME_TRANSFORMS:
            _add(errors, f"transforms[{index}].type", f"{why}; {stage.type} cannot run in it")
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
