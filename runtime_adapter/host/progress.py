"""What a driver makes of its queries' progress reports: tasks, and per-stage totals.

Spark reports each micro-batch in a ``StreamingQueryProgress``; :class:`TaskTracker` turns
successive reports into Kafka Connect's tasks (one per source partition: offsets, lag,
rows/s) and :class:`StageTotals` adds up the per-stage event counts the query observes.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any, cast

from runtime_adapter.base import TaskStatus
from runtime_adapter.kafka import PartitionInfo
from runtime_adapter.states import State


def progress_dict(progress: Any) -> dict[str, Any] | None:
    """A query progress report as plain JSON data.

    PySpark 4 returns ``StreamingQueryProgress``, a dict subclass that cannot be
    rebuilt from its items (``dataclasses.asdict`` would try), so go through JSON.
    """
    if progress is None:
        return None
    # A progress report is a JSON object: json.loads gives it as Any.
    if hasattr(progress, "json"):
        return cast("dict[str, Any]", json.loads(progress.json))
    return cast("dict[str, Any]", json.loads(json.dumps(progress, default=str)))


def progress_after(query: Any, batch_id: int) -> list[dict[str, Any]]:
    """The progress reports a query still holds of the batches after ``batch_id``, oldest
    first, as plain JSON data.

    Read from the newest back, through the JVM's array, so that only those reports cross
    Py4J: PySpark's ``recentProgress`` converts every report Spark keeps (100 by default),
    and a busy channel has run a few batches between any two polls of its driver.
    """
    reports = query._jsq.recentProgress()
    newer: list[dict[str, Any]] = []
    for index in range(len(reports) - 1, -1, -1):
        report = reports[index]
        if report.batchId() <= batch_id:
            break
        newer.append(json.loads(report.json()))
    newer.reverse()
    return newer


def as_offsets(raw: Any) -> dict[tuple[str | None, int], int]:
    """A source's offsets from a progress report, keyed by (topic, partition).

    Spark's Kafka source reports ``{"topic": {"0": 12}}``: one entry per partition. Other
    sources run as a single task: the rate source reports a number, the file source
    ``{"logOffset": n}``; they become one entry ``(None, 0)``.
    """
    if isinstance(raw, str):
        raw = json.loads(raw) if raw else {}
    if isinstance(raw, dict) and raw and all(isinstance(v, dict) for v in raw.values()):
        return {
            (topic, int(partition)): int(offset)
            for topic, partitions in raw.items()
            for partition, offset in partitions.items()
        }
    if isinstance(raw, dict) and isinstance(raw.get("logOffset"), int):
        return {(None, 0): raw["logOffset"]}
    if isinstance(raw, int):
        return {(None, 0): raw}
    return {}


@dataclass
class TaskTracker:
    """Turns successive query progress reports into per-partition tasks."""

    worker_id: str
    partitions: list[PartitionInfo]
    offsets: dict[tuple[str | None, int], int] = field(default_factory=dict)
    latest: dict[tuple[str | None, int], int] = field(default_factory=dict)
    rates: dict[tuple[str | None, int], float] = field(default_factory=dict)
    _last_seen: float = 0.0
    batch_id: int = -1

    def update(self, progress: dict[str, Any]) -> bool:
        """Fold in a progress report; True when it is a batch not seen before."""
        if progress.get("batchId", -1) == self.batch_id:
            return False
        self.batch_id = progress.get("batchId", -1)
        now = time.time()
        for source in progress.get("sources", []):
            end = as_offsets(source.get("endOffset"))
            if self._last_seen:
                elapsed = max(now - self._last_seen, 1e-3)
                for key, offset in end.items():
                    self.rates[key] = max(offset - self.offsets.get(key, offset), 0) / elapsed
            self.offsets.update(end)
            self.latest.update(as_offsets(source.get("latestOffset")))
        self._last_seen = now
        return True

    def tasks(self, state: State) -> list[TaskStatus]:
        keys = {(p.topic, p.partition) for p in self.partitions} | set(self.offsets)
        tasks = []
        for task_id, key in enumerate(sorted(keys, key=lambda k: (k[0] or "", k[1]))):
            offset = self.offsets.get(key)
            end = self.latest.get(key)
            tasks.append(
                TaskStatus(
                    task_id=task_id,
                    state=state,
                    worker_id=self.worker_id,
                    topic=key[0],
                    partition=key[1],
                    offset=offset,
                    end_offset=end,
                    lag=(end - offset) if end is not None and offset is not None else None,
                    rows_per_second=round(self.rates.get(key, 0.0), 2),
                )
            )
        return tasks


@dataclass
class StageTotals:
    """Per-stage event counts summed over the micro-batches this driver ran.

    Each batch reports its counts in its progress (``observedMetrics``, see
    :func:`pipelines.builder.stage_counts`); they are added up once per batch (by batch id,
    per run of the query) and kept with the rates of the latest batch. They live as long as
    the driver: a restarted driver counts from 0 again, like the tasks' rows/s.
    """

    points: list[Any] = field(default_factory=list)
    totals: list[dict[str, Any]] = field(default_factory=list)
    run_id: str | None = None
    batch_id: int = -1

    def start(self, points: list[Any], run_id: str | None) -> None:
        """A (re)started query: the same stages keep their totals, new ones start from 0."""
        if [(p.stage, p.index, p.type) for p in points] != [
            (p.stage, p.index, p.type) for p in self.points
        ]:
            self.points, self.totals = list(points), []
        self.run_id, self.batch_id = run_id, -1

    def missed(self, progress: dict[str, Any]) -> bool:
        """Whether batches ran between the last one folded in and this report."""
        return self.batch_id >= 0 and progress.get("batchId", -1) > self.batch_id + 1

    def fold(self, progress: dict[str, Any]) -> bool:
        """Add one progress report's counts; True when it was a batch not counted before."""
        from pipelines.builder import stage_counts

        batch_id = progress.get("batchId", -1)
        if not progress.get("numInputRows"):
            # An idle trigger (nothing flows now; its batch id may be the next batch's):
            # rates drop to 0 and nothing is folded in.
            for total in self.totals:
                total["in_per_second"] = total["out_per_second"] = 0.0
            return False
        counts = stage_counts(
            self.points,
            progress.get("observedMetrics") or {},
            rows_read=progress.get("numInputRows"),
            rows_written=(progress.get("sink") or {}).get("numOutputRows"),
        )
        if counts is None or batch_id <= self.batch_id:
            return False
        self.batch_id = batch_id
        per_second = _batch_rate(progress) / max(counts[0]["in"], 1)
        if not self.totals:
            self.totals = [{**count, "in": 0, "out": 0, "failed": 0} for count in counts]
        for total, count in zip(self.totals, counts, strict=True):
            for key in ("in", "out", "failed"):
                total[key] += count[key]
            total["in_per_second"] = round(count["in"] * per_second, 2)
            total["out_per_second"] = round(count["out"] * per_second, 2)
        return True

    def stages(self) -> list[dict[str, Any]]:
        return [dict(total) for total in self.totals]


def stage_counts_enabled() -> bool:
    """Whether queries count events per stage (``SLUICE_STAGE_COUNTS``, default on).

    The counts cost throughput (see ``python -m bench.stage_counts``); off, a channel's
    status has no ``stages``."""
    value = os.environ.get("SLUICE_STAGE_COUNTS", "true").strip().lower()
    return value not in ("0", "false", "no", "off")


def _batch_rate(progress: dict[str, Any]) -> float:
    """Records read per second in a batch's progress: Spark's input rate (over the time since
    the previous batch started), else its processing rate; 0 when neither is known."""
    for key in ("inputRowsPerSecond", "processedRowsPerSecond"):
        rate = progress.get(key)
        if isinstance(rate, int | float) and rate > 0 and rate != float("inf"):
            return float(rate)
    return 0.0
