"""What a driver makes of its queries' progress reports: tasks, and per-stage totals.

Spark reports each micro-batch in a ``StreamingQueryProgress``; :class:`TaskTracker` turns
successive reports into Kafka Connect's tasks (one per source partition: offsets, lag,
rows/s) and :class:`StageTotals` adds up the per-stage event counts the query observes.
A bus's query hands each batch's per-rule counts to :class:`RuleTotals`, which adds them up.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from runtime_adapter.base import TaskStatus
from runtime_adapter.kafka import PartitionInfo
from runtime_adapter.states import State

_T = TypeVar("_T")


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
    """Turns successive query progress reports into per-partition tasks.

    A Kafka partition's rows/s is over the last :data:`RATE_WINDOW_SECONDS`, like the stages'
    rates: the offsets it moved in the window over the window's length, computed when the
    tasks are listed (so it falls to 0 within a window once nothing flows). A source without
    partitions (generator, files) runs as one task whose offset is no count of rows (the rate
    source's is seconds, the file source's a log index): its rows/s is the source stage's
    rate, given to :meth:`tasks`, or unknown (None).
    """

    worker_id: str
    partitions: list[PartitionInfo]
    offsets: dict[tuple[str | None, int], int] = field(default_factory=dict)
    latest: dict[tuple[str | None, int], int] = field(default_factory=dict)
    batch_id: int = -1
    clock: Any = time.monotonic
    samples: list[tuple[float, dict[tuple[str | None, int], int]]] = field(default_factory=list)
    """(time, each partition's offset) after each report, back to the window's start."""

    def update(self, progress: dict[str, Any]) -> bool:
        """Fold in a progress report; True when it is a batch not seen before."""
        if progress.get("batchId", -1) == self.batch_id:
            return False
        self.batch_id = progress.get("batchId", -1)
        now = self.clock()
        for source in progress.get("sources", []):
            if not self.samples:  # the rates' base: where the first batch started
                start = as_offsets(source.get("startOffset"))
                self.samples.append((now, {**start, **self.offsets}))
            self.offsets.update(as_offsets(source.get("endOffset")))
            self.latest.update(as_offsets(source.get("latestOffset")))
        self.samples.append((now, dict(self.offsets)))
        while len(self.samples) > 1 and self.samples[1][0] <= now - RATE_WINDOW_SECONDS:
            self.samples.pop(0)
        return True

    def rate(self, key: tuple[str | None, int]) -> float:
        """A partition's records per second over the window, to now."""
        now = self.clock()
        if not self.samples or key not in self.offsets:
            return 0.0
        base, span = rate_window(self.samples, now)
        moved: int = self.offsets[key] - base.get(key, self.offsets[key])
        return round(max(moved, 0) / span, 2)

    def tasks(self, state: State, source_rate: float | None = None) -> list[TaskStatus]:
        """The tasks; ``source_rate`` is a partitionless source's rows/s (its stage's rate)."""
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
                    rows_per_second=self.rate(key) if key[0] is not None else source_rate,
                )
            )
        return tasks


RATE_WINDOW_SECONDS = 30.0
"""The window of the reported rates: events counted in the last 30 s, divided by the time.
One rate for every reader (the status, the console's pages, ``/metrics``, the history), true
within a batch's share of the window (a batch a second: about 3 %), and back to 0 within a
window once nothing flows."""

STALLED_SECONDS = 5.0
"""No batch for this long (or twice the batches' usual spacing, if longer): nothing flows, and
the rates' window runs to now, so they fall to 0 as it passes."""


def rate_window(samples: list[tuple[float, _T]], now: float) -> tuple[_T, float]:
    """``(base totals, span)`` of the rates over ``samples`` (``(time, totals)`` at the start
    and after each batch, oldest first): the counts since the newest sample at or before the
    window's start, over the time from that sample to the last batch's, so that the time
    since the last batch (whose events are not counted yet) does not bias a steady rate
    down; once batches stop (:data:`STALLED_SECONDS`) the span runs to now. At least 1 s."""
    base_time, base = samples[0]
    for sample_time, totals in samples:
        if sample_time <= now - RATE_WINDOW_SECONDS:
            base_time, base = sample_time, totals
    last_time = samples[-1][0]
    spacing = (last_time - samples[0][0]) / (len(samples) - 1) if len(samples) > 1 else 0.0
    end = last_time if now - last_time <= max(STALLED_SECONDS, 2 * spacing) else now
    return base, max(float(end - base_time), 1.0)


@dataclass
class StageTotals:
    """Per-stage event counts summed over the micro-batches this driver ran.

    Each batch reports its counts in its progress (``observedMetrics``, see
    :func:`pipelines.stage_metrics.stage_counts`); they are added up once per batch (by batch id,
    per run of the query). Their rates are the counts of the last :data:`RATE_WINDOW_SECONDS`
    over that window (:meth:`stages`): not a batch's own, which swings with the batch's
    timing and stays when batches stop. They live as long as the driver: a restarted driver
    counts from 0 again, like the tasks' rows/s.
    """

    points: list[Any] = field(default_factory=list)
    totals: list[dict[str, Any]] = field(default_factory=list)
    run_id: str | None = None
    batch_id: int = -1
    clock: Any = time.monotonic
    samples: list[tuple[float, list[tuple[int, int]]]] = field(default_factory=list)
    """(time, each stage's (in, out) totals) at the query's start and after each batch."""

    def start(self, points: list[Any], run_id: str | None) -> None:
        """A (re)started query: the same stages keep their totals, new ones start from 0."""
        if [(p.stage, p.index, p.type) for p in points] != [
            (p.stage, p.index, p.type) for p in self.points
        ]:
            self.points, self.totals = list(points), []
        self.run_id, self.batch_id = run_id, -1
        self.samples = [(self.clock(), self._sums())]

    def _sums(self) -> list[tuple[int, int]]:
        if not self.totals:
            return [(0, 0)] * len(self.points)
        return [(int(total["in"]), int(total["out"])) for total in self.totals]

    def _sample(self) -> None:
        now = self.clock()
        self.samples.append((now, self._sums()))
        # Keep the newest sample at or before the window's start (the rates' base).
        while len(self.samples) > 1 and self.samples[1][0] <= now - RATE_WINDOW_SECONDS:
            self.samples.pop(0)

    def missed(self, progress: dict[str, Any]) -> bool:
        """Whether batches ran between the last one folded in and this report."""
        return self.batch_id >= 0 and progress.get("batchId", -1) > self.batch_id + 1

    def fold(self, progress: dict[str, Any]) -> bool:
        """Add one progress report's counts; True when it was a batch not counted before."""
        from pipelines.stage_metrics import stage_counts

        batch_id = progress.get("batchId", -1)
        if not progress.get("numInputRows"):
            # An idle trigger (nothing flows now; its batch id may be the next batch's):
            # nothing is folded in (the rates fall as the window passes).
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
        if not self.totals:
            self.totals = [{**count, "in": 0, "out": 0, "failed": 0} for count in counts]
        for total, count in zip(self.totals, counts, strict=True):
            for key in ("in", "out", "failed"):
                total[key] += count[key]
        self._sample()
        return True

    def stages(self) -> list[dict[str, Any]]:
        """Each stage's totals and its rates over the last :data:`RATE_WINDOW_SECONDS` (from
        the newest sample at or before the window's start, or the query's start, to now)."""
        if not self.totals:
            return []
        now = self.clock()
        base, span = rate_window(self.samples or [(now, self._sums())], now)
        listed = []
        for position, total in enumerate(self.totals):
            then_in, then_out = base[position] if position < len(base) else (0, 0)
            listed.append(
                {
                    **total,
                    "in_per_second": round(max(total["in"] - then_in, 0) / span, 2),
                    "out_per_second": round(max(total["out"] - then_out, 0) / span, 2),
                }
            )
        return listed


def source_rate(stages: list[dict[str, Any]]) -> float | None:
    """The source stage's events per second in :meth:`StageTotals.stages`, None without it."""
    for stage in stages:
        if stage.get("stage") == "source":
            return float(stage["in_per_second"])
    return None


RuleLayout = list[tuple[str, list[str]]]
"""A bus's rules as its status lists them: each rule's name and its sinks' plugin types, in
the spec's order (:func:`rule_layout`)."""

_SINK_INDEX = re.compile(r"sinks\[(\d+)\]$")


def rule_layout(spec: Any) -> RuleLayout:
    """The rules of ``spec`` (a :class:`pipelines.spec.ChannelSpec`) for :meth:`RuleTotals.rules`;
    empty for a linear channel, whose status has no rules."""
    if not spec.is_bus:
        return []
    return [(rule.name, [sink.type for sink in rule.sinks]) for rule in spec.rules]


@dataclass
class _RuleTotal:
    matched: int = 0
    delivered: int = 0
    failed: int = 0
    # by the sink's index in the rule: (plugin type, delivered, failed)
    targets: dict[int, tuple[str, int, int]] = field(default_factory=dict)


class RuleTotals:
    """A bus's per-rule counts summed over the micro-batches this driver ran, replay-safe.

    The query hands each batch's counts to :meth:`fold` (``on_rule_counts``, called from its
    ``foreachBatch`` on a thread of Spark's, while the connector's own thread reads
    :meth:`rules`: a lock keeps the two apart). A batch id is counted once: a batch run
    again (a query restarted from its checkpoint replays its last, unfinished batch) is not
    counted twice. Totals are kept by rule name, so a change of the rules keeps the counts of
    the rules it keeps; a new rule starts from 0. They live as long as the connector runs in
    this driver, like :class:`StageTotals`.

    Rates are over the last :data:`RATE_WINDOW_SECONDS`, as the stage counts' are: the
    events each rule matched and delivered in the window, over its length.
    """

    def __init__(self, clock: Any = time.monotonic) -> None:
        self.batch_id = -1
        self._totals: dict[str, _RuleTotal] = {}
        self._clock = clock
        # (time, each rule's (matched, delivered) totals): at the start, after each batch
        self._samples: list[tuple[float, dict[str, tuple[int, int]]]] = [(clock(), {})]
        self._lock = threading.Lock()

    def fold(self, batch_id: int, counts: list[dict[str, Any]]) -> bool:
        """Add one batch's counts (``[{"rule", "matched", "delivered", "failed", "targets":
        [{"sink", "type", "delivered", "failed"}]}]``); True when the batch was not counted
        before."""
        with self._lock:
            if batch_id <= self.batch_id:
                return False
            self.batch_id = batch_id
            for count in counts:
                name = str(count["rule"])
                total = self._totals.setdefault(name, _RuleTotal())
                matched, delivered = int(count.get("matched", 0)), int(count.get("delivered", 0))
                total.matched += matched
                total.delivered += delivered
                total.failed += int(count.get("failed", 0))
                for position, target in enumerate(count.get("targets") or []):
                    index = _sink_index(str(target.get("sink", "")), position)
                    kind = str(target.get("type", ""))
                    before = total.targets.get(index)
                    sent, lost = (before[1], before[2]) if before and before[0] == kind else (0, 0)
                    total.targets[index] = (
                        kind,
                        sent + int(target.get("delivered", 0)),
                        lost + int(target.get("failed", 0)),
                    )
            now = self._clock()
            sums = {name: (t.matched, t.delivered) for name, t in self._totals.items()}
            self._samples.append((now, sums))
            while len(self._samples) > 1 and self._samples[1][0] <= now - RATE_WINDOW_SECONDS:
                self._samples.pop(0)
            return True

    def _rates(self) -> dict[str, tuple[float, float]]:
        """Each rule's matched and delivered per second over the window, to now."""
        now = self._clock()
        base, span = rate_window(self._samples, now)
        rates = {}
        for name, total in self._totals.items():
            then_matched, then_delivered = base.get(name, (0, 0))
            rates[name] = (
                round(max(total.matched - then_matched, 0) / span, 2),
                round(max(total.delivered - then_delivered, 0) / span, 2),
            )
        return rates

    def rules(self, layout: RuleLayout) -> list[dict[str, Any]]:
        """Every rule of ``layout`` with its totals (0 for a rule no batch counted yet), as
        :attr:`runtime_adapter.base.ConnectorStatus.rules` lists them; empty until a batch
        was counted."""
        with self._lock:
            if self.batch_id < 0:
                return []
            rates = self._rates()
            listed = []
            for position, (name, sinks) in enumerate(layout):
                total = self._totals.get(name, _RuleTotal())
                matched_rate, delivered_rate = rates.get(name, (0.0, 0.0))
                targets = []
                for index, kind in enumerate(sinks):
                    counted = total.targets.get(index)
                    sent, lost = (
                        (counted[1], counted[2]) if counted and counted[0] == kind else (0, 0)
                    )
                    targets.append(
                        {
                            "sink": f"rules[{position}].sinks[{index}]",
                            "type": kind,
                            "delivered": sent,
                            "failed": lost,
                        }
                    )
                listed.append(
                    {
                        "rule": name,
                        "matched": total.matched,
                        "delivered": total.delivered,
                        "failed": total.failed,
                        "matched_per_second": matched_rate,
                        "delivered_per_second": delivered_rate,
                        "targets": targets,
                    }
                )
            return listed


def _sink_index(path: str, position: int) -> int:
    """A target's index in its rule, from its path (``rules[2].sinks[1]`` → 1); else its
    position in the batch's list."""
    found = _SINK_INDEX.search(path)
    return int(found.group(1)) if found else position
