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
MAX_DEPTH = 12
"""Nesting followed at most; deeper values are kept as ``{}`` (any JSON value)."""
MAX_PROPERTIES = 500
"""Properties kept per object at most (the first seen); an object past it allows more."""

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
_TYPE_ORDER = ("null", "boolean", "integer", "number", "string", "array", "object")


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
