"""The channel spec: source -> transforms -> one sink (a linear channel), or source ->
transforms -> rules (a bus: each rule a pattern, its own transforms and sinks), and its
limits. :mod:`pipelines.spec.validation` validates a spec against them
(:func:`~pipelines.spec.validation.validate_spec`) and reports every error per field
(:class:`SpecError`).

Size limits (so saving, storing and deploying a spec stays cheap: 10,000 transforms once took
2.5 s to save), each a field error at the path it concerns:

=========================== ========= ===================================================
limit                       value     error at
=========================== ========= ===================================================
``MAX_SPEC_BYTES``          256 KiB   ``""`` (the spec), its compact JSON in UTF-8
``MAX_TRANSFORMS``          50        ``transforms``
``MAX_STAGE_CONFIG_BYTES``  64 KiB    ``<stage>.config``, its compact JSON in UTF-8
``MAX_STAGE_TYPE_LENGTH``   64        ``<stage>.type``
``MAX_RULES``               300       ``rules``
``MAX_RULE_SINKS``          5         ``rules[i].sinks``
=========================== ========= ===================================================

A bus: ``rules: [{name, enabled, pattern, transforms, sinks}]`` in place of ``sink``. An
event (after the source and the shared ``transforms``) goes to every enabled rule whose
pattern it matches (no pattern: every event), through that rule's transforms, to each of its
sinks. A linear channel is a bus of one implicit rule (:meth:`ChannelSpec.branches`).
Errors inside a rule are located in it: ``rules[2].pattern``, ``rules[2].sinks[1].config.topic``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from pipelines.spec.plugins import plugin_types

ErrorMap = dict[str, list[str]]

MAX_SPEC_BYTES = 256 * 1024
"""The largest spec, as compact UTF-8 JSON."""
MAX_TRANSFORMS = 50
"""The most transforms one channel chains."""
MAX_STAGE_CONFIG_BYTES = 64 * 1024
"""The largest config of one stage (source, transform, sink, dead letter), as compact JSON."""
MAX_STAGE_TYPE_LENGTH = 64
"""The longest plugin type name a stage may give."""
MAX_RULES = 300
"""The most rules one bus holds (an EventBridge bus's default quota)."""
MAX_RULE_SINKS = 5
"""The most sinks (targets) one rule sends to (EventBridge's targets per rule)."""
RULE_NAME_PATTERN = r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$"
"""A rule's name: lowercase letters, digits and dashes, 1-63 characters, as a channel's."""
DEFAULT_RULE = "default"
"""The name of a linear channel's one implicit rule (:meth:`ChannelSpec.branches`)."""
NOT_RULE_SINKS = ("preview",)
"""Sinks a bus's rule cannot send to (the live tail shows one linear channel's output)."""

NOT_DEAD_LETTER_SINKS = ("preview",)
"""Sinks that cannot take dead letters (the live tail shows a channel's output only)."""


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
REAL_TIME_REFUSED_TRANSFORMS = {
    "enrich": (
        "enrich waits on an HTTP endpoint (timeouts, retries with backoff) and keeps a cache "
        "across events, in Python workers; real-time mode runs native, stateless transforms "
        "(use micro-batch)"
    ),
}
"""Transforms real-time mode cannot run, with why."""
REAL_TIME_TRANSFORMS = frozenset(plugin_types("transform")) - REAL_TIME_REFUSED_TRANSFORMS.keys()
"""The built-in transforms that are stateless and native (each maps one event to at most one,
with no state across events and no Python): real-time mode runs them."""
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
            "ends and events wait). real-time: how often progress is checkpointed (default 300, "
            "at least 5): each checkpoint pauses events for about half a second, and a stop "
            "replays at most this much."
        ),
    )


class RuleSpec(BaseModel):
    """One rule of a bus: the events matching ``pattern`` (every event without one), reshaped
    by ``transforms``, go to each of ``sinks``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        pattern=RULE_NAME_PATTERN,
        description="Unique in the bus: lowercase letters, digits and dashes (1-63).",
    )
    description: str = Field("", max_length=500)
    enabled: bool = Field(
        True, description="A disabled rule matches nothing and its sinks receive nothing."
    )
    pattern: dict[str, Any] | None = Field(
        None,
        description=(
            "An EventBridge event pattern over the event in its CloudEvents JSON form (after "
            "the channel's own transforms); none: every event."
        ),
    )
    transforms: list[StageSpec] = Field(default_factory=list, max_length=MAX_TRANSFORMS)
    sinks: list[StageSpec] = Field(min_length=1, max_length=MAX_RULE_SINKS)


class ChannelSpec(BaseModel):
    """A channel: one source, an ordered chain of transforms, then one sink (a linear channel)
    or rules (a bus), an error policy, and how the runtime runs it."""

    model_config = ConfigDict(extra="forbid")

    source: StageSpec
    transforms: list[StageSpec] = Field(default_factory=list, max_length=MAX_TRANSFORMS)
    sink: StageSpec | None = Field(None, description="A linear channel's sink (or rules).")
    rules: list[RuleSpec] | None = Field(
        None,
        max_length=MAX_RULES,
        description="A bus's rules (in place of sink): an event goes to every rule it matches.",
    )
    errors: ErrorPolicy = Field(default_factory=ErrorPolicy)
    runtime: RuntimeOptions = Field(default_factory=RuntimeOptions)

    @model_serializer(mode="wrap")
    def _without_the_unused_form(self, handler: SerializerFunctionWrapHandler) -> Any:
        """A linear channel dumps without ``rules``, a bus without ``sink``: the stored form
        of a linear spec is what it was before buses existed."""
        data = handler(self)
        if isinstance(data, dict):
            for key in ("sink", "rules"):
                if data.get(key) is None:
                    data.pop(key, None)
        return data

    @property
    def is_bus(self) -> bool:
        """Whether the channel routes to rules (else it has one sink)."""
        return self.rules is not None

    def branches(self) -> list[RuleSpec]:
        """The rules events are routed to: a bus's, or a linear channel's one implicit rule
        (``default``: no pattern, no transforms of its own, its sink)."""
        if self.rules is not None:
            return list(self.rules)
        assert self.sink is not None  # validate_spec: one of the two
        return [RuleSpec(name=DEFAULT_RULE, sinks=[self.sink])]

    def sink_stages(self) -> list[tuple[str, StageSpec]]:
        """Every sink events are delivered to, with its path in the spec (``sink``,
        ``rules[0].sinks[1]``); the dead-letter target is not among them."""
        if self.rules is None:
            return [("sink", self.sink)] if self.sink is not None else []
        return [
            (f"rules[{i}].sinks[{j}]", sink)
            for i, rule in enumerate(self.rules)
            for j, sink in enumerate(rule.sinks)
        ]

    @property
    def the_sink(self) -> StageSpec:
        """A linear channel's sink (raises ``ValueError`` for a bus)."""
        if self.sink is None:
            raise ValueError("a bus has no single sink: see branches()")
        return self.sink


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
