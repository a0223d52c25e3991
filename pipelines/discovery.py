"""Schema discovery: sample a channel's live events, infer a JSON Schema, merge the samples.

Sampling happens beside a channel's query, never in it: the query :mod:`pipelines` builds is
the same with discovery on or off. Every :data:`SAMPLE_SECONDS` the channel's driver takes a
few events with a small batch job (:class:`SourceSampler`), parsed by the source's own code
into the events' JSON form:

* a Kafka-backed channel (a ``kafka`` source, or ``http``: its ingest topic): the last record
  of each source partition up to the offsets the query has reached (:func:`kafka_samples`);
* a ``files`` channel: the first lines of the two newest files of its directory (its
  ``file_pattern``, Spark's file source's rules: no hidden ``.``/``_`` files), read again only
  when a newer file arrives (:func:`files_samples`): a Parquet file's first rows;
* a ``generator`` channel: events its template gives, made in the driver from its own config
  (:func:`generator_samples`), once the query has run a batch.

The driver hands the sampled events to the console as the ``preview`` sink hands its live
tail over; the console merges them (:func:`infer`, :func:`merge`). The inference and merging
are :mod:`pipelines.spec.shapes` (pure, for the console too).
"""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
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
    "SourceSampler",
    "canonical",
    "document",
    "end_offsets",
    "field_paths",
    "files_samples",
    "generator_samples",
    "infer",
    "kafka_samples",
    "merge",
    "merge_all",
]

KAFKA_BACKED = frozenset({"kafka", "http"})
"""Source types sampled by reading their Kafka topics."""
SAMPLE_SECONDS = 30.0
"""How often a channel's driver samples its source (its first sample: at its first batch).
Each sample is a small Spark job (planning and code generation of the source's parsing:
0.3-0.6 s of CPU on a busy 2-core machine), so this bounds discovery's cost to a few percent
of one core: see ``bench/discovery.py``."""
KAFKA_SAMPLE_PARTITIONS = 16
"""Partitions read per Kafka sample at most (the last record of each)."""
FILES_SAMPLED = 2
"""The newest files of a files source read per sample."""
FILE_HEAD_BYTES = 64 * 1024
"""What is read of the start of a JSON lines or CSV file (whole lines of it)."""
EVENTS_PER_FILE = 4
"""Events sampled per file at most."""
GENERATOR_SAMPLES = 2
"""Events a generator sample makes."""


class SourceSampler:
    """Samples one running query's source beside it, at most every :data:`SAMPLE_SECONDS`
    (files: only when a newer file arrived). The driver calls :meth:`sample` with each
    progress report (on a thread of its own, when :meth:`due`); it returns the sampled events
    (JSON objects), often none."""

    def __init__(self, spec: Any) -> None:
        from pipelines.spec import parse_stage_config

        self.spec = spec
        self.config = parse_stage_config("source", spec.source)
        self.sampled_at = -SAMPLE_SECONDS
        self.files_seen: tuple[Any, ...] | None = None

    def due(self, now: float) -> bool:
        """Whether a sample is due at ``now`` (a monotonic clock's seconds)."""
        return now - self.sampled_at >= SAMPLE_SECONDS

    def sample(
        self, spark: Any, progress: Mapping[str, Any] | None, now: float
    ) -> list[dict[str, Any]]:
        """``now``: a monotonic clock's seconds. Only once the query reported a batch."""
        if not progress or not self.due(now):
            return []
        kind = self.spec.source.type
        if kind in KAFKA_BACKED:
            offsets = end_offsets(progress)
            if not offsets:
                return []
            self.sampled_at = now
            return kafka_samples(spark, self.spec, offsets)
        self.sampled_at = now
        if kind == "files":
            newest = newest_files(self.config)
            signature = tuple((f.path, f.mtime_ns, f.size) for f in newest)
            if not newest or signature == self.files_seen:
                return []
            self.files_seen = signature
            return files_samples(spark, self.config, newest)
        if kind == "generator":
            return generator_samples(spark, self.config, int(progress.get("batchId", 0)))
        return []


def kafka_samples(
    spark: Any, spec: Any, end_offsets: Mapping[str, Mapping[str, int]]
) -> list[dict[str, Any]]:
    """The last record before ``end_offsets`` (``topic → partition → offset``, the query's
    progress) of at most :data:`KAFKA_SAMPLE_PARTITIONS` partitions of a Kafka-backed
    channel's source, read as a batch and parsed by the source (the channel's brokers,
    security and format), in the events' JSON form; failed ones left out."""
    from pipelines.query import run_kafka_config
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
    return healthy_json(SOURCES[spec.source.type].to_events(records, config))


def healthy_json(events: Any, limit: int | None = None) -> list[dict[str, Any]]:
    """The events of a batch DataFrame that did not fail, in their JSON form (collected)."""
    from pyspark.sql import functions as F

    from pipelines import native
    from pipelines.cloudevents import event_json

    healthy = events.where(F.col("failure").isNull()) if "failure" in events.columns else events
    if limit is not None:
        healthy = healthy.limit(limit)
    rows = healthy.select(event_json(native.json_zone(healthy)).alias("event")).collect()
    return [json.loads(row.event) for row in rows]


@dataclass(frozen=True)
class SourceFile:
    """A file a files source reads: where, its modification time and size."""

    path: Path
    mtime_ns: int
    size: int


def newest_files(config: Any, count: int = FILES_SAMPLED) -> list[SourceFile]:
    """The ``count`` newest files a files source reads now (its directory, re-checked as the
    query does; Spark's rules: no sub-directories, no hidden ``.``/``_`` files, the
    ``file_pattern`` glob on the name). Empty for a location that is not local (``file:``):
    those are not sampled."""
    from pipelines.spec.paths import recheck_files_location

    location = recheck_files_location(config.path, "files source")
    if not location.startswith("file://"):
        return []
    found: list[SourceFile] = []
    try:
        entries = list(os.scandir(location[len("file://") :]))
    except OSError:
        return []
    for entry in entries:
        name = entry.name
        if name.startswith((".", "_")) or not entry.is_file(follow_symlinks=False):
            continue
        if config.file_pattern is not None and not fnmatch.fnmatchcase(name, config.file_pattern):
            continue
        stat = entry.stat(follow_symlinks=False)
        found.append(SourceFile(Path(entry.path), stat.st_mtime_ns, stat.st_size))
    found.sort(key=lambda f: (f.mtime_ns, f.path.name), reverse=True)
    return found[:count]


def files_samples(spark: Any, config: Any, files: list[SourceFile]) -> list[dict[str, Any]]:
    """The first :data:`EVENTS_PER_FILE` records of each of ``files`` (a bad one left out),
    read as the files source reads them (:func:`pipelines.sources.files.file_records_to_events`),
    in one small job: JSON lines and CSV from the first lines of the file (within its first
    :data:`FILE_HEAD_BYTES`; a CSV header with them), Parquet from its first rows."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType, TimestampType

    from pipelines.sources.files import file_records_to_events
    from pipelines.sql import sql_column

    if not files:
        return []
    if config.format == "parquet":
        rows = spark.read.parquet(*(file.path.as_uri() for file in files))
        row = F.struct(*(F.col(sql_column(name)) for name in rows.columns)).alias("_row")
        raw = rows.select(
            row,
            F.col("_metadata.file_path").alias("_file_path"),
            F.col("_metadata.file_name").alias("_file_name"),
            F.col("_metadata.file_modification_time").alias("_file_time"),
            F.col("_metadata.row_index").alias("_row_index"),
        ).where(F.col("_row_index") < EVENTS_PER_FILE)
    else:
        schema = StructType(
            [
                StructField("_file_path", StringType()),
                StructField("_file_name", StringType()),
                StructField("_file_time", TimestampType()),
                StructField("_text", StringType()),
            ]
        )
        lines = EVENTS_PER_FILE + (1 if config.format == "csv" and config.csv_header else 0)
        texts = [
            (
                file.path.as_uri(),
                file.path.name,
                datetime.fromtimestamp(file.mtime_ns / 1e9, UTC),
                _head(file, lines),
            )
            for file in files
        ]
        raw = spark.createDataFrame(texts, schema)
    return healthy_json(file_records_to_events(raw, config))


def _head(file: SourceFile, lines: int) -> str:
    """The first ``lines`` whole lines within a file's first :data:`FILE_HEAD_BYTES`."""
    try:
        with file.path.open("rb") as stream:
            head = stream.read(FILE_HEAD_BYTES)
    except OSError:
        return ""
    if len(head) == FILE_HEAD_BYTES and b"\n" in head:
        head = head[: head.rindex(b"\n") + 1]
    return b"".join(head.splitlines(keepends=True)[:lines]).decode("utf-8", errors="replace")


def generator_samples(spark: Any, config: Any, batch: int) -> list[dict[str, Any]]:
    """:data:`GENERATOR_SAMPLES` events a generator source makes (its own code, from its
    config), numbered after ``batch`` so that they vary as the query runs."""
    from pyspark.sql import functions as F

    from pipelines.sources.generator import ticks_to_events

    first = max(batch, 0) * GENERATOR_SAMPLES
    ticks = spark.range(first, first + GENERATOR_SAMPLES).select(
        F.col("id").alias("value"), F.current_timestamp().alias("timestamp")
    )
    return healthy_json(ticks_to_events(ticks, config))


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
