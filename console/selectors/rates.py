"""A channel's events per second: one figure for every reader (the status, the channels list,
the channel page, ``/metrics``).

The runtime reports each stage's rate over its last 30 s (the counts of the window over its
length: ``runtime_adapter.host.progress.RATE_WINDOW_SECONDS``), which falls to 0 within a
window once nothing flows. The source stage's ``in_per_second`` is the channel's rate. A
channel whose driver does not count stages (``SLUICE_STAGE_COUNTS=false``) falls back on the
sum of its running tasks' rows/s, Spark's rate of their latest micro-batch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def events_per_second(stage_metrics: Any, task_rates: Iterable[float | None]) -> float | None:
    """The source's rate over the window; else the tasks' sum; None when neither is known."""
    for stage in stage_metrics if isinstance(stage_metrics, list) else []:
        if isinstance(stage, dict) and stage.get("stage") == "source":
            rate = stage.get("in_per_second")
            if isinstance(rate, (int, float)) and not isinstance(rate, bool):
                return float(rate)
    known = [rate for rate in task_rates if rate is not None]
    return float(sum(known)) if known else None
