"""The series ``/metrics`` adds for the channels' history (:mod:`console.selectors.history`):
events in and out per channel and per stage, and the latest micro-batch's duration.

* ``sluice_channel_events_in_total{channel}`` — events the source read, and
  ``sluice_channel_events_out_total{channel}`` — events the sink(s) took, since the
  channel was first started (carried over its drivers: ``console.services.count_totals``);
* ``sluice_stage_events_in_total{channel,stage,type}``, ``…_out_total``, ``…_failed_total``
  — the same per stage (``stage`` is ``source``, ``transforms[<i>]`` or ``sink``);
* ``sluice_channel_batch_duration_seconds{channel}`` — how long the latest micro-batch took.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    return float(value)


def stage_label(stage: Mapping[str, Any]) -> str:
    kind = str(stage.get("stage", ""))
    index = stage.get("index")
    if kind == "transform" and isinstance(index, int):
        return f"transforms[{index}]"
    return kind


def history_metrics(channels: Iterable[Mapping[str, Any]]) -> Iterator[Metric]:
    """Built from the rows of ``console.metrics._channels`` (no query of its own)."""
    events_in = CounterMetricFamily(
        "sluice_channel_events_in",
        "Events the channel's source read (since it was first started).",
        labels=["channel"],
    )
    events_out = CounterMetricFamily(
        "sluice_channel_events_out",
        "Events the channel's sinks took (since it was first started).",
        labels=["channel"],
    )
    per_stage = {
        key: CounterMetricFamily(
            f"sluice_stage_events_{key}",
            f"Events each stage {text} (since the channel was first started).",
            labels=["channel", "stage", "type"],
        )
        for key, text in (("in", "received"), ("out", "passed on"), ("failed", "failed"))
    }
    batch = GaugeMetricFamily(
        "sluice_channel_batch_duration_seconds",
        "How long the channel's latest micro-batch took.",
        labels=["channel"],
    )
    for channel in channels:
        name = channel["name"]
        stages = channel.get("connector__stage_metrics")
        read = taken = 0.0
        seen = False
        for stage in stages if isinstance(stages, list) else []:
            if not isinstance(stage, Mapping):
                continue
            seen = True
            labels = [name, stage_label(stage), str(stage.get("type", ""))]
            for key, family in per_stage.items():
                family.add_metric(labels, _number(stage.get(key)))
            if stage.get("stage") == "source":
                read = max(read, _number(stage.get("in")))
            elif stage.get("stage") == "sink":
                taken += _number(stage.get("out"))
        if seen:
            events_in.add_metric([name], read)
            events_out.add_metric([name], taken)
        seconds = channel.get("connector__batch_seconds")
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool):
            batch.add_metric([name], float(seconds))
    yield from (events_in, events_out, *per_stage.values(), batch)
