"""Count a channel's events per stage as they pass, in the query's own pass over the data.

One named ``CollectMetrics`` at the error gate (:func:`observe_stages`) and one before each
stage that drops events (:func:`observe_rows`); :func:`stage_counts` turns a batch's
``observedMetrics`` into events in / out / failed per stage. The linear builder
(:mod:`pipelines.builder`), the bus (:mod:`pipelines.bus`) and the runtime's progress
reports (``runtime_adapter.host.progress``) all read the same points (:func:`stage_points`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipelines.spec import ChannelSpec, StageSpec, validate_spec
from pipelines.spec.live import retry_policy

STAGE_METRICS = "sluice.stages"
"""The observed metric (``DataFrame.observe``) counting a channel's events before its error
gate: ``rows`` and, per stage, ``failed_<position>``. A stage that drops events (a filter)
has its own, ``sluice.stages.before_<position>``: the ``rows`` that reach it."""

DROPPING_TRANSFORMS = frozenset({"filter"})
"""The transform types that drop events (every other stage passes each event on, failed
or not): only before these is a count needed of its own — and not before the first one,
which gets every record read (the batch's ``numInputRows``)."""

SINKS_REPORTING_ROWS = frozenset({"kafka"})
"""Sinks whose Spark writer reports the rows it wrote in the batch's progress
(``sink.numOutputRows``: DataSource V2 writers). Under ``errors.tolerance: none`` a batch
either fails or has no failed events, so what reaches such a sink needs no count of its
own either: a channel like ``kafka → filter → … → kafka`` counts its stages for free."""


@dataclass(frozen=True)
class StagePoint:
    """A stage whose events the query counts: where it sits, and how its failures are named.

    ``stage`` is ``source``, ``transform`` or ``sink``; ``index`` the transform's place (None
    for the source and the sink); ``label`` the ``failure.stage`` the stage gives the events
    it fails (``transforms[2] (cast)``); ``position`` its place among all stages (0: source).
    """

    position: int
    stage: str
    index: int | None
    type: str
    label: str

    @property
    def drops(self) -> bool:
        """Whether the stage may drop events (then the rows reaching it are counted)."""
        return self.stage == "transform" and self.type in DROPPING_TRANSFORMS

    @property
    def metric(self) -> str:
        """The name of the metric counting the rows that reach a dropping stage."""
        return f"{STAGE_METRICS}.before_{self.position}"


def stage_points(spec: ChannelSpec | Mapping[str, object]) -> list[StagePoint]:
    """The counted stages of a channel, in order: its source, its transforms, its sink (a
    bus: its source and shared transforms; its rules are counted per rule instead, see
    :meth:`pipelines.bus.batch.BatchRun.rule_counts`)."""
    if not isinstance(spec, ChannelSpec):  # a validated spec is not validated again
        spec = validate_spec(spec)
    points = [StagePoint(0, "source", None, spec.source.type, "source")]
    for index, stage in enumerate(spec.transforms):
        points.append(transform_point(index, stage))
    if spec.is_bus:
        return points
    points.append(StagePoint(len(points), "sink", None, spec.the_sink.type, "sink"))
    return points


def transform_point(index: int, stage: StageSpec) -> StagePoint:
    """A transform's point; its failures' stage is ``transforms[2] (cast)``."""
    label = f"transforms[{index}] ({stage.type})"
    return StagePoint(index + 1, "transform", index, stage.type, label)


def observes_gate(spec: ChannelSpec) -> bool:
    """Whether the events reaching the error gate must be counted by an observe of their
    own (:func:`observe_stages`): under ``errors.tolerance: all`` (failures are counted per
    stage) or when the sink does not report the rows it wrote."""
    return (
        spec.errors.tolerance == "all"
        or spec.the_sink.type not in SINKS_REPORTING_ROWS
        or retry_policy(spec.the_sink) is not None  # written by foreachBatch: no row count
    )


def observe_rows(events: DataFrame, point: StagePoint) -> DataFrame:
    """``events`` with the rows reaching a dropping stage counted as they pass."""
    return events.observe(point.metric, F.count(F.lit(1)).alias("rows"))


def observe_stages(events: DataFrame, points: list[StagePoint]) -> DataFrame:
    """``events`` (after the sink's checks, before the error gate) with the stages' counts
    observed as they pass: in the same pass as the data, no extra job, no action.

    One named ``CollectMetrics`` (plain ``count`` / ``sum(CASE ...)`` aggregates) with
    ``rows`` (every event still there, failed or not) and ``failed_<position>`` per stage
    (a failed event keeps the stage that failed it and travels on untouched); with the rows
    counted before each dropping stage (:func:`observe_rows`), :func:`stage_counts` turns
    them into events in / out / failed per stage. Each ``CollectMetrics`` costs a pass over
    the rows outside generated code: there are as few as the dropping stages allow.
    Streaming queries report them in ``StreamingQueryProgress.observedMetrics``.
    """
    stage = F.col("failure.stage")
    failed = [
        F.sum(F.when(stage == F.lit(point.label), 1).otherwise(0)).alias(f"failed_{point.position}")
        for point in points
    ]
    return events.observe(STAGE_METRICS, F.count(F.lit(1)).alias("rows"), *failed)


def stage_counts(
    points: list[StagePoint],
    observed: Mapping[str, Mapping[str, Any]],
    *,
    rows_read: int | None = None,
    rows_written: int | None = None,
) -> list[dict[str, Any]] | None:
    """One micro-batch's per-stage counts from its observed metrics, or None when the batch
    did not report them (e.g. a progress report without new data).

    ``rows_read`` (the progress' ``numInputRows``) stands for the rows reaching the first
    dropping stage, which is never observed; ``rows_written`` (``sink.numOutputRows``, -1
    when the sink does not report it) for the gate's count when that was not observed
    (:func:`observes_gate`): then no event of the batch failed.

    Each stage: ``{"stage", "index", "type", "in", "out", "failed"}``. A stage's ``in`` is
    the healthy events it received (the source: every record read), ``failed`` the events it
    failed, ``out`` the healthy ones it passed on; ``in - out - failed`` is what it dropped
    (a filter). Failed events are not counted again by later stages.
    """
    end = observed.get(STAGE_METRICS)
    if end is None and rows_written is not None and rows_written >= 0:
        end = {"rows": rows_written}
    if not points or end is None:
        return None
    marks = []  # the rows reaching each dropping stage, then those reaching the error gate
    first = True
    for point in points:
        if point.drops:
            if point.metric in observed:
                marks.append(int(observed[point.metric].get("rows") or 0))
            elif first and rows_read is not None:
                marks.append(int(rows_read))
            else:
                return None
            first = False
    marks.append(int(end.get("rows") or 0))
    rows = healthy = marks.pop(0)  # nothing is dropped before the first mark: all read
    counts: list[dict[str, Any]] = []
    for point in points:
        failed = int(end.get(f"failed_{point.position}") or 0)
        dropped = 0
        if point.drops:
            after = marks.pop(0)
            dropped, rows = max(rows - after, 0), after
        out = max(healthy - failed - dropped, 0)
        counts.append(
            {
                "stage": point.stage,
                "index": point.index,
                "type": point.type,
                "in": healthy,
                "out": out,
                "failed": failed,
            }
        )
        healthy = out
    return counts
