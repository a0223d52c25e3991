"""A channel's history: its metrics over time, read from the time-series store.

The store is VictoriaMetrics (``scripts/victoriametrics.sh``; any Prometheus-compatible query
API works), which scrapes ``GET /metrics`` (:mod:`console.metrics`) every 10 s and keeps the
raw samples for ``SLUICE_HISTORY_RETENTION`` (31 days by default). Nothing here writes: the
console only asks ``/api/v1/query_range`` server-side, one PromQL query per series, and
answers JSON with timestamps and units. The browser never talks to the store.

Windows and steps: up to 24 h a point every 10 s (the scrape interval), beyond that one
every 5 minutes; each point of a rate is the rate over its own step, so no sample is
counted twice and none is skipped.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from django.conf import settings

logger = logging.getLogger(__name__)

#: window name -> (seconds, step seconds)
WINDOWS: dict[str, tuple[int, int]] = {
    "1h": (3600, 10),
    "6h": (6 * 3600, 10),
    "24h": (24 * 3600, 10),
    "7d": (7 * 86400, 300),
    "30d": (30 * 86400, 300),
}
DEFAULT_WINDOW = "1h"


@dataclass(frozen=True)
class SeriesDef:
    """How one history series is read: PromQL per breakdown (``{c}``: the channel
    selector, ``{s}``: the step as a duration), and its unit."""

    unit: str
    description: str
    channel: str
    stage: str | None = None
    rule: str | None = None


SERIES: dict[str, SeriesDef] = {
    "events_in": SeriesDef(
        unit="events/s",
        description="Events read from the source per second (per stage: events each stage "
        "received; per rule: events the rule matched).",
        channel="sum(rate(sluice_channel_events_in_total{c}[{s}]))",
        stage="sum by (stage) (rate(sluice_stage_events_in_total{c}[{s}]))",
        rule="sum by (rule) (rate(sluice_rule_matched_total{c}[{s}]))",
    ),
    "events_out": SeriesDef(
        unit="events/s",
        description="Events written to the sinks per second (per stage: events each stage "
        "passed on; per rule: events every target of the rule took).",
        channel="sum(rate(sluice_channel_events_out_total{c}[{s}]))",
        stage="sum by (stage) (rate(sluice_stage_events_out_total{c}[{s}]))",
        rule="sum by (rule) (rate(sluice_rule_delivered_total{c}[{s}]))",
    ),
    "lag": SeriesDef(
        unit="records",
        description="Records the channel is behind its source (the highest in each step).",
        channel="max(max_over_time(sluice_channel_lag{c}[{s}]))",
    ),
    "dead_letters": SeriesDef(
        unit="events",
        description="Events sent to the dead-letter target (or skipped) during each step "
        "(per stage: events each stage failed; per rule: events a target failed).",
        channel="sum(increase(sluice_channel_dead_letters_total{c}[{s}]))",
        stage="sum by (stage) (increase(sluice_stage_events_failed_total{c}[{s}]))",
        rule="sum by (rule) (increase(sluice_rule_failed_total{c}[{s}]))",
    ),
    "batch_duration": SeriesDef(
        unit="s",
        description="How long the channel's micro-batches took (the longest in each step).",
        channel="max(max_over_time(sluice_channel_batch_duration_seconds{c}[{s}]))",
    ),
}


class HistoryUnavailable(Exception):
    """The time-series store did not answer (down, too slow, or an error)."""


def step_for(window: str) -> int:
    return WINDOWS[window][1]


def selector(channel: str) -> str:
    """``{channel="…"}`` with the name quoted as PromQL wants (backslash, quote, newline)."""
    quoted = channel.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '{channel="' + quoted + '"}'


def queries(channel: str, name: str, step: int) -> dict[str, str]:
    """The PromQL of one series: ``{"channel": q, "stage": q, "rule": q}`` (those it has)."""
    spec = SERIES[name]
    found: dict[str, str] = {}
    for breakdown in ("channel", "stage", "rule"):
        template = getattr(spec, breakdown)
        if template is not None:
            found[breakdown] = template.replace("{c}", selector(channel)).replace("{s}", f"{step}s")
    return found


def _query_range(query: str, start: int, end: int, step: int) -> list[dict[str, Any]]:
    return _ask(
        "query_range",
        {"query": query, "start": start, "end": end, "step": f"{step}s"},
        settings.SLUICE_HISTORY_TIMEOUT,
    )


def _query(query: str, at: int, *, timeout: float) -> list[dict[str, Any]]:
    """An instant query: ``[{"metric": {...}, "value": [time, "text"]}, ...]``."""
    return _ask("query", {"query": query, "time": at}, timeout)


def _ask(endpoint: str, form: dict[str, Any], timeout: float) -> list[dict[str, Any]]:
    base = settings.SLUICE_HISTORY_URL
    host = urllib.parse.urlsplit(base).hostname
    if host not in settings.SLUICE_HISTORY_ALLOWED_HOSTS:
        raise HistoryUnavailable(
            f"The history store's host {host!r} is not in SLUICE_HISTORY_ALLOWED_HOSTS."
        )
    body = urllib.parse.urlencode(form).encode()
    request = urllib.request.Request(
        f"{base}/api/v1/{endpoint}",
        data=body,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            payload = json.load(answer)
    except urllib.error.HTTPError as exc:
        raise HistoryUnavailable(f"The history store refused the query ({exc.code}).") from exc
    except (OSError, ValueError) as exc:
        raise HistoryUnavailable(
            f"The history store at {base} is unavailable ({exc.__class__.__name__}); "
            "try again shortly."
        ) from exc
    if payload.get("status") != "success":
        raise HistoryUnavailable(f"The history store answered an error: {payload.get('error')}")
    return list(payload.get("data", {}).get("result", []))


#: How the store writes values that are not finite numbers.
_NOT_FINITE = frozenset({"NaN", "+Inf", "-Inf", "Inf"})


def _aligned(values: list[list[Any]], start: int, step: int, count: int) -> list[float | None]:
    """The store's ``[[unix seconds, "value"], ...]`` as one value per point of the grid
    ``start, start + step, …`` (``None`` where the store has no sample)."""
    if len(values) == count and int(values[0][0]) == start:
        # Every point is there (a channel scraped all along): no index to compute.
        return [None if raw in _NOT_FINITE else float(raw) for _stamp, raw in values]
    aligned: list[float | None] = [None] * count
    for stamp, raw in values:
        index = (int(stamp) - start) // step
        if 0 <= index < count and raw not in _NOT_FINITE:
            aligned[index] = float(raw)
    return aligned


BREAKDOWNS = ("stage", "rule")


def channel_history(
    channel: str,
    window: str,
    series: list[str],
    *,
    by: tuple[str, ...] = (),
    end: float | None = None,
) -> dict[str, Any]:
    """The channel's series over the window ending now (or at ``end``), as JSON data: one
    ``timestamps`` list for the whole answer and, per series, one value per timestamp (per
    stage and per rule too when ``by`` names them and the series has them)."""
    seconds, step = WINDOWS[window]
    # Align on the step so two reloads show the same points.
    stop = int((time.time() if end is None else end) // step * step)
    start = stop - seconds
    count = seconds // step + 1
    jobs = [
        (name, breakdown, query)
        for name in series
        for breakdown, query in queries(channel, name, step).items()
        if breakdown == "channel" or breakdown in by
    ]
    # The queries are independent: ask the store for them at once (it answers each in ms).
    with ThreadPoolExecutor(max_workers=min(len(jobs), 8) or 1) as pool:
        results = list(pool.map(lambda job: _query_range(job[2], start, stop, step), jobs))
    entries: dict[str, dict[str, Any]] = {}
    for name in series:
        spec = SERIES[name]
        entries[name] = {
            "name": name,
            "unit": spec.unit,
            "description": spec.description,
            "values": [None] * count,
            "stages": [],
            "rules": [],
        }
    for (name, breakdown, _query), result in zip(jobs, results, strict=True):
        entry = entries[name]
        if breakdown == "channel":
            if result:
                entry["values"] = _aligned(result[0]["values"], start, step, count)
        else:
            entry[f"{breakdown}s"] = sorted(
                (
                    {
                        "name": item["metric"].get(breakdown, ""),
                        "values": _aligned(item["values"], start, step, count),
                    }
                    for item in result
                ),
                key=lambda item: item["name"],
            )
    return {
        "channel": channel,
        "window": window,
        "step": step,
        "start": start,
        "end": stop,
        "timestamps": list(range(start, stop + 1, step)),
        "series": list(entries.values()),
    }


#: How far back the health rules look for the lag trend, and how long one answer is reused.
LAG_TREND_SECONDS = 300
LAG_TREND_CACHE_SECONDS = 15.0
#: A store that did not answer is not asked again for this long (health must stay fast).
LAG_TREND_RETRY_SECONDS = 60.0
_LAG_TREND_TIMEOUT = 1.0

_lag_before: tuple[float, dict[str, float]] = (0.0, {})
_lag_before_lock = threading.Lock()


def lags_before() -> dict[str, float]:
    """Every channel's lag :data:`LAG_TREND_SECONDS` ago (``{channel: records}``), for the
    health rule on a growing lag: one instant query for the whole fleet, its answer reused
    for :data:`LAG_TREND_CACHE_SECONDS`. Empty (the rule then does not fire) while the store
    is unreachable, asked again after :data:`LAG_TREND_RETRY_SECONDS`."""
    global _lag_before
    now = time.monotonic()
    with _lag_before_lock:
        until, cached = _lag_before
        if now < until:
            return cached
        query = f"sum by (channel) (sluice_channel_lag offset {LAG_TREND_SECONDS}s)"
        try:
            result = _query(query, int(time.time()), timeout=_LAG_TREND_TIMEOUT)
        except HistoryUnavailable as exc:
            logger.info("no lag trend for the health rules: %s", exc)
            _lag_before = (now + LAG_TREND_RETRY_SECONDS, {})
            return {}
        found: dict[str, float] = {}
        for series in result:
            name = series.get("metric", {}).get("channel")
            value = (series.get("value") or [None, None])[1]
            if name and value not in (None, *_NOT_FINITE):
                found[str(name)] = float(value)
        _lag_before = (now + LAG_TREND_CACHE_SECONDS, found)
        return found


def forget_lag_trend() -> None:
    """Drop the cached lag trend (tests; a changed store)."""
    global _lag_before
    with _lag_before_lock:
        _lag_before = (0.0, {})
