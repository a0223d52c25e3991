"""Whether a new revision of a running channel is taken live, without its query restarting.

Pure spec logic (no Spark): the runtime's drivers apply it (:mod:`pipelines.bus`) and the
console tells a user, before a deploy, what the deploy will do.
"""

from __future__ import annotations

from typing import Any

from pipelines.kafka_options import kafka_sink_options
from pipelines.spec.channel import ChannelSpec, SpecError, StageSpec
from pipelines.spec.configs.kafka import KafkaSinkConfig
from pipelines.spec.configs.retry import SinkRetry
from pipelines.spec.validation import parse_stage_config, validate_spec

RETRIED_SINKS = frozenset({"kafka", "jdbc", "files"})
"""Sinks whose micro-batch write is retried by the channel as their ``retry`` policy says
(:mod:`pipelines.retry`). The ``http`` sink retries each request itself (its own ``retry``),
so its batch write is not retried again on top of that."""


def retry_policy(stage: StageSpec, config: Any = None) -> SinkRetry | None:
    """The retry policy of a sink stage's batch write (None: one attempt, as Spark's sink);
    ``config``: the stage's parsed config, when the caller has it."""
    if stage.type not in RETRIED_SINKS:
        return None
    if config is None:
        config = parse_stage_config("sink", stage)
    policy = getattr(config, "retry", None)
    return policy if isinstance(policy, SinkRetry) and policy.attempts > 1 else None


def group_key(config: KafkaSinkConfig) -> str:
    options = sorted(kafka_sink_options(config).items())
    return repr((config.format, config.key_field, options, config.retry))


def compiled_into_query(spec: ChannelSpec) -> bool:
    """Whether a bus runs compiled into its streaming query
    (:func:`pipelines.bus.kafka.compiled_kafka_writer`): ``errors.tolerance: none``, and every
    enabled rule has no transforms of its own and only Kafka targets that one write serves
    (the same serialization, producer settings, and no retry policy). Such a bus's routing
    and its Kafka write are part of the query's plan: a rule change restarts the query (from
    its checkpoint)."""
    if not spec.is_bus or spec.errors.tolerance != "none":
        return False
    active = [rule for rule in spec.rules or [] if rule.enabled]
    stages = [stage for rule in active for stage in rule.sinks]
    if not stages or any(rule.transforms for rule in active):
        return False
    if any(stage.type != "kafka" for stage in stages):
        return False
    configs = [parse_stage_config("sink", stage) for stage in stages]
    if any(retry_policy(stage, config) for stage, config in zip(stages, configs, strict=True)):
        return False
    kafka = [config for config in configs if isinstance(config, KafkaSinkConfig)]
    return len(kafka) == len(configs) and len({group_key(c) for c in kafka}) == 1


def live_change(old: ChannelSpec, new: ChannelSpec) -> bool:
    """Whether :meth:`BusRouter.replace` can apply ``new`` to a bus running ``old``: both are
    buses, only their ``rules`` differ (rules added, edited, disabled or removed) and ``old``
    is routed batch by batch (not :func:`compiled_into_query`)."""
    if not (old.is_bus and new.is_bus) or compiled_into_query(old):
        return False
    return without_rules(old) == without_rules(new)


def without_rules(spec: ChannelSpec) -> dict[str, Any]:
    return spec.model_dump(mode="json", exclude={"rules"})


def live_revision(running: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether a query running the (plain) spec ``running`` can take ``new`` without a restart:
    both are buses and only their rules differ (:func:`live_change`). An invalid spec is
    never taken live (its start reports why)."""
    if running.get("rules") is None or new.get("rules") is None:
        return False
    try:
        return live_change(validate_spec(running), validate_spec(new))
    except SpecError:
        return False
