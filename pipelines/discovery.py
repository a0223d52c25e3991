"""Schema discovery: sample a channel's live events, infer a JSON Schema, merge the samples.

Sampling costs the data plane little, and nothing per event where it can:

* A Kafka-backed channel (a ``kafka`` source, or ``http``: its ingest topic) is sampled
  beside its query, not in it: every :data:`KAFKA_SAMPLE_SECONDS` its driver reads the last
  record of each source partition up to the offsets the query has reached, as a small batch
  job (:func:`kafka_samples`), and parses them with the source's own code into the events'
  JSON form. The channel's query is the same with discovery on or off.
* Any other source (generator, files) gets one more ``observe`` (:func:`observe_samples`)
  right after it parses the events: one ``first`` aggregate whose value is the batch's first
  event in its JSON form, written once per partition and batch. It costs the pass of a
  ``CollectMetrics`` over the rows (see :func:`pipelines.builder.observe_stages`).

Either way the driver hands the sampled events (:func:`samples_of` takes them out of a
progress report) to the console, as the ``preview`` sink hands its live tail over; the
console merges them (:func:`infer`, :func:`merge`).

The inference and merging are :mod:`pipelines.spec.shapes` (pure, for the console too).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pipelines.spec.shapes import (  # the inference, re-exported
    canonical,
    document,
    field_paths,
    infer,
    merge,
    merge_all,
)

__all__ = [
    "DISCOVERY_METRICS",
    "canonical",
    "document",
    "end_offsets",
    "field_paths",
    "infer",
    "kafka_samples",
    "merge",
    "merge_all",
    "observe_samples",
    "observes",
    "samples_of",
]

DISCOVERY_METRICS = "sluice_discovery"
"""The name of the ``observe`` holding a batch's samples."""
SAMPLES = 1
"""Events an ``observe`` samples per micro-batch at most."""
KAFKA_BACKED = frozenset({"kafka", "http"})
"""Source types sampled by reading their Kafka topics beside the query."""
KAFKA_SAMPLE_SECONDS = 10.0
"""How often a Kafka-backed channel's driver samples its source."""
KAFKA_SAMPLE_PARTITIONS = 16
"""Partitions read per Kafka sample at most (the last record of each)."""


def observe_samples(events: Any) -> Any:
    """``events`` (a streaming DataFrame of events, as the source parsed them) with each
    micro-batch's first event observed in its JSON form (``first``: the JSON is written for
    one row per partition; a failed first event is no sample)."""
    from pyspark.sql import functions as F

    from pipelines import native
    from pipelines.cloudevents import event_json

    event = event_json(native.json_zone(events))
    picked = F.when(F.col("failure").isNull(), event) if "failure" in events.columns else event
    return events.observe(DISCOVERY_METRICS, F.first(picked).alias("s0"))


def observes(source_type: str) -> bool:
    """Whether a channel with discovery on samples its events with :func:`observe_samples`
    (else by :func:`kafka_samples`, beside its query)."""
    return source_type not in KAFKA_BACKED


def kafka_samples(
    spark: Any, spec: Any, end_offsets: Mapping[str, Mapping[str, int]]
) -> list[dict[str, Any]]:
    """The last record before ``end_offsets`` (``topic → partition → offset``, the query's
    progress) of at most :data:`KAFKA_SAMPLE_PARTITIONS` partitions of a Kafka-backed
    channel's source, read as a batch and parsed by the source (the channel's brokers,
    security and format), in the events' JSON form; failed ones left out."""
    from pyspark.sql import functions as F

    from pipelines import native
    from pipelines.builder import run_kafka_config
    from pipelines.cloudevents import event_json
    from pipelines.sources import SOURCES
    from pipelines.sources.kafka import kafka_source_options
    from pipelines.spec import parse_stage_config

    config = parse_stage_config("source", spec.source)
    kafka = run_kafka_config(spec.source.type, config)
    starts: dict[str, dict[str, int]] = {}
    ends: dict[str, dict[str, int]] = {}
    picked = 0
    for topic, partitions in sorted(end_offsets.items()):
        for partition, offset in sorted(partitions.items(), key=lambda item: int(item[0])):
            if int(offset) <= 0 or picked >= KAFKA_SAMPLE_PARTITIONS:
                continue
            starts.setdefault(topic, {})[str(partition)] = int(offset) - 1
            ends.setdefault(topic, {})[str(partition)] = int(offset)
            picked += 1
    if not starts:
        return []
    options = kafka_source_options(kafka)
    for name in (
        "subscribePattern",
        "startingTimestamp",
        "startingOffsetsByTimestampStrategy",
        "maxOffsetsPerTrigger",
        "minOffsetsPerTrigger",
        "maxTriggerDelay",
    ):
        options.pop(name, None)
    options["subscribe"] = ",".join(sorted(starts))
    options["startingOffsets"] = json.dumps(starts)
    options["endingOffsets"] = json.dumps(ends)
    options["failOnDataLoss"] = "false"  # a record deleted by retention is no sample
    records = spark.read.format("kafka").options(**options).load()
    events = SOURCES[spec.source.type].to_events(records, config)
    healthy = events.where(F.col("failure").isNull()) if "failure" in events.columns else events
    rows = healthy.select(event_json(native.json_zone(healthy)).alias("event")).collect()
    return [json.loads(row.event) for row in rows]


def end_offsets(progress: Mapping[str, Any] | None) -> dict[str, dict[str, int]]:
    """The offsets a query's Kafka source reached (``topic → partition → offset``) in a
    progress report; empty without one."""
    found: dict[str, dict[str, int]] = {}
    for source in (progress or {}).get("sources") or []:
        end = source.get("endOffset") if isinstance(source, Mapping) else None
        if isinstance(end, str):
            try:
                end = json.loads(end)
            except ValueError:
                continue
        if not isinstance(end, Mapping):
            continue
        for topic, partitions in end.items():
            if isinstance(partitions, Mapping):
                for partition, offset in partitions.items():
                    if isinstance(offset, int) and str(partition).lstrip("-").isdigit():
                        found.setdefault(str(topic), {})[str(partition)] = offset
    return found


def samples_of(progress: Mapping[str, Any] | None, *, remove: bool = False) -> list[dict[str, Any]]:
    """The sampled events (JSON objects, duplicates dropped) of a progress report's
    observed metrics; ``remove`` takes them out of the report (they are events, not
    figures: a status never carries them)."""
    if not progress:
        return []
    observed = progress.get("observedMetrics")
    if not isinstance(observed, dict):
        return []
    row = observed.pop(DISCOVERY_METRICS, None) if remove else observed.get(DISCOVERY_METRICS)
    if not isinstance(row, Mapping):
        return []
    seen: set[str] = set()
    events: list[dict[str, Any]] = []
    for key in sorted(row):
        text = row[key]
        if not isinstance(text, str) or text in seen:
            continue
        seen.add(text)
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict):
            events.append(value)
    return events
