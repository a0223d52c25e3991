"""Preview sink: hand the newest events of each micro-batch to a publisher (the live tail).

``pipelines`` imports no Redis, so the events go to a callback, a :data:`PreviewPublisher`,
given to :func:`pipelines.builder.build_stream` (``preview_publisher=``): the runtime's driver
passes one that stores them for the console. Without one, the events go to the channel's
in-memory :class:`PreviewBuffer` (:func:`preview_buffer`), which tests and local runs read.

Each micro-batch publishes at most ``max_events`` events, the newest by ``time`` (then origin
offset), oldest first, in their CloudEvents JSON form (dicts). Spark selects them
(``orderBy`` + ``limit``: a bounded top-N), so the driver never collects more than that.
The publisher keeps the newest ``max_events`` over all batches.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.readwriter import DataStreamWriter

from pipelines import native
from pipelines.cloudevents import event_json
from pipelines.spec.configs.preview import PreviewSinkConfig

PreviewPublisher = Callable[[list[dict[str, Any]]], None]
"""Receives a micro-batch's newest events (JSON form, oldest first); never an empty list."""


class PreviewBuffer:
    """The newest ``max_events`` published events, in memory (thread-safe)."""

    def __init__(self, max_events: int) -> None:
        self._events: deque[dict[str, Any]] = deque(maxlen=max_events)
        self._lock = threading.Lock()

    @property
    def max_events(self) -> int:
        """How many events the buffer keeps."""
        return self._events.maxlen or 0

    def publish(self, events: list[dict[str, Any]]) -> None:
        """Add events (oldest first), dropping the oldest beyond ``max_events``."""
        with self._lock:
            self._events.extend(events)

    def events(self) -> list[dict[str, Any]]:
        """A copy of the kept events, oldest first."""
        with self._lock:
            return list(self._events)


_BUFFERS: dict[str, PreviewBuffer] = {}
_BUFFERS_LOCK = threading.Lock()


def preview_buffer(channel: str, max_events: int) -> PreviewBuffer:
    """The in-memory buffer of ``channel``, (re)created when ``max_events`` changes."""
    with _BUFFERS_LOCK:
        buffer = _BUFFERS.get(channel)
        if buffer is None or buffer.max_events != max_events:
            buffer = _BUFFERS[channel] = PreviewBuffer(max_events)
        return buffer


def newest_events(events: DataFrame, max_events: int) -> list[dict[str, Any]]:
    """The newest ``max_events`` events of a (batch) DataFrame in JSON form, oldest first."""
    newest = events.orderBy(
        F.col("time").desc_nulls_last(), F.col("origin_offset").desc_nulls_last()
    ).limit(max_events)
    rows = newest.select(event_json(native.json_zone(newest)).alias("event")).collect()
    return [json.loads(row.event) for row in reversed(rows)]


def write_preview(
    events: DataFrame, config: PreviewSinkConfig, publisher: PreviewPublisher | None = None
) -> DataStreamWriter:
    """A streaming writer publishing each micro-batch's newest events.

    ``publisher`` defaults to a private :class:`PreviewBuffer`; the builder passes the
    caller's publisher or the channel's :func:`preview_buffer`.
    """
    publish = publisher or PreviewBuffer(config.max_events).publish

    def publish_batch(batch: DataFrame, batch_id: int) -> None:
        write_preview_batch(batch, config, batch_id, publish)

    return events.writeStream.foreachBatch(publish_batch).outputMode("append")


def write_preview_batch(
    events: DataFrame, config: PreviewSinkConfig, batch_id: int, publisher: PreviewPublisher
) -> None:
    """Publish one micro-batch's newest events (from ``foreachBatch``)."""
    newest = newest_events(events, config.max_events)
    if newest:
        publisher(newest)
