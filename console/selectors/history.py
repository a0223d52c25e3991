"""A channel's history: its metrics over time, read from the time-series store.

The store is VictoriaMetrics (``scripts/victoriametrics.sh``; any Prometheus-compatible query
API works), which scrapes ``GET /metrics`` (:mod:`console.metrics`) every 10 s and keeps the
raw samples for ``SLUICE_HISTORY_RETENTION`` (31 days by default). Nothing here writes: the
console only asks ``/api/v1/query_range`` server-side, one PromQL query per series, and
answers JSON with timestamps and units. The browser never talks to the store.

Windows and steps: from 5 min up to 24 h a point every 10 s (the scrape interval: no finer
point exists), beyond that one every 5 minutes; each point of a rate is the rate over its own
step, so no sample is counted twice and none is skipped.
"""

from __future__ import annotations

import http.client
import json
import logging
import math
import re
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

from django.conf import settings

logger = logging.getLogger(__name__)

#: window name -> (seconds, step seconds)
WINDOWS: dict[str, tuple[int, int]] = {
    "5m": (300, 10),
    "15m": (900, 10),
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


class _Store:
    """Queries to the store over one kept-alive connection, all of them within ``timeout``
    seconds: a history answer asks several one after the other (faster than at once on a
    loaded host, and it spares a connection per query)."""

    def __init__(self, timeout: float) -> None:
        self.base = settings.SLUICE_HISTORY_URL
        parts = urllib.parse.urlsplit(self.base)
        if parts.hostname not in settings.SLUICE_HISTORY_ALLOWED_HOSTS:
            raise HistoryUnavailable(
                f"The history store's host {parts.hostname!r} is not in "
                "SLUICE_HISTORY_ALLOWED_HOSTS."
            )
        kind = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        self.path = parts.path.rstrip("/")
        self.connection = kind(parts.hostname, parts.port, timeout=timeout)
        self.deadline = time.monotonic() + timeout

    def __enter__(self) -> _Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.connection.close()

    def ask(self, endpoint: str, form: dict[str, Any]) -> str:
        """The store's answer (JSON text) to ``POST /api/v1/<endpoint>``."""
        left = self.deadline - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            self.connection.timeout = left
            if self.connection.sock is not None:
                self.connection.sock.settimeout(left)
            self.connection.request(
                "POST",
                f"{self.path}/api/v1/{endpoint}",
                body=urllib.parse.urlencode(form),
                headers={"Content-Type": "application/x-www-form-urlencoded"},
            )
            answer = self.connection.getresponse()
            body = answer.read()
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise HistoryUnavailable(
                f"The history store at {self.base} is unavailable ({exc.__class__.__name__}); "
                "try again shortly."
            ) from exc
        if answer.status != 200:
            raise HistoryUnavailable(f"The history store refused the query ({answer.status}).")
        return body.decode()

    def query_range_text(self, query: str, start: int, end: int, step: int) -> str:
        """A range query's answer as the store wrote it (JSON text)."""
        return self.ask(
            "query_range", {"query": query, "start": start, "end": end, "step": f"{step}s"}
        )


def _query_range(query: str, start: int, end: int, step: int) -> list[dict[str, Any]]:
    """A range query: ``[{"metric": {...}, "values": [[time, "text"], ...]}, ...]``."""
    with _Store(settings.SLUICE_HISTORY_TIMEOUT) as store:
        return _result(store.query_range_text(query, start, end, step))


def _query(query: str, at: int, *, timeout: float) -> list[dict[str, Any]]:
    """An instant query: ``[{"metric": {...}, "value": [time, "text"]}, ...]``."""
    with _Store(timeout) as store:
        return _result(store.ask("query", {"query": query, "time": at}))


def _result(text: str) -> list[dict[str, Any]]:
    """The ``data.result`` of one of the store's answers."""
    try:
        payload = json.loads(text)
    except ValueError as exc:
        raise HistoryUnavailable("The history store answered something that is no JSON.") from exc
    return _success(payload)


def _success(payload: Any) -> list[dict[str, Any]]:
    if not isinstance(payload, dict) or payload.get("status") != "success":
        error = payload.get("error") if isinstance(payload, dict) else None
        raise HistoryUnavailable(f"The history store answered an error: {error}")
    return list(payload.get("data", {}).get("result", []))


#: One series of a range query: its labels, and its points' times and values as the store wrote
#: them (a time may carry the brackets and comma around it: ``[[1700000000,``, ``],[1700000010,``).
Points = tuple[dict[str, Any], list[str], list[Any]]

_VALUES_KEY = '"values":['


def _read_matrix(text: str) -> list[Points]:
    """The series of a range query's answer, their points not parsed one by one.

    A day at 10 s is 8,641 ``[time,"value"]`` pairs a series, and parsing them as JSON took
    most of the history answer's time. The store writes them in one regular form: each
    ``"values"`` array is cut out of the answer (it ends at the first ``]]``, as its values are
    quoted numbers) and split on its quotes; the rest (status, labels) is parsed as JSON. An
    answer in any other form is parsed as JSON whole."""
    try:
        return _read_matrix_fast(text)
    except (ValueError, TypeError, KeyError, IndexError):
        return [
            (
                item["metric"],
                [str(point[0]) for point in item["values"]],
                [point[1] for point in item["values"]],
            )
            for item in _result(text)
        ]


def _read_matrix_fast(text: str) -> list[Points]:
    skeleton: list[str] = []
    arrays: list[str] = []
    at = 0
    while (found := text.find(_VALUES_KEY, at)) >= 0:
        begin = found + len(_VALUES_KEY) - 1  # the array's "["
        end = begin + 2 if text.startswith("[]", begin) else text.find("]]", begin) + 2
        if end < begin + 2:
            raise ValueError("a values array without its end")
        skeleton += [text[at:found], f'"values":{len(arrays)}']
        arrays.append(text[begin:end])
        at = end
    skeleton.append(text[at:])
    found_series: list[Points] = []
    for item in _success(json.loads("".join(skeleton))):
        array = arrays[item["values"]]
        if array == "[]":
            found_series.append((item["metric"], [], []))
            continue
        # [[t,"v"],[t,"v"]] -> "[[t,", "v", "],[t,", "v", "]]"
        parts = array.split('"')
        if len(parts) % 2 == 0 or parts[-1] != "]]" or not parts[0].startswith("[["):
            raise ValueError("values in an unexpected form")
        found_series.append((item["metric"], parts[0:-1:2], parts[1::2]))
    return found_series


def _stamp(text: str) -> int:
    """Unix seconds from a time as the store wrote it (``1700000000``, ``],[1700000010,``)."""
    bare = text.strip("[],")
    return int(bare) if bare.isdigit() else int(float(bare))


#: How the store writes values that are not finite numbers.
_NOT_FINITE = frozenset({"NaN", "+Inf", "-Inf", "Inf"})
#: What a list of the store's values may hold to be passed on as JSON text unchanged: number
#: characters, commas and null (no quote, bracket or brace, so nothing but numbers and nulls).
_NUMBER_LIST = re.compile(r"[-+.0-9eEnul,]*")


def _values_json(stamps: list[str], values: list[Any], start: int, step: int, count: int) -> str:
    """A series' points (times and values as the store wrote them) as the JSON text of one
    value per point of the grid ``start, start + step, …`` (``null`` where the store has no
    sample).

    The store writes each value as the shortest decimal that reads back as the same double,
    which is what JSON needs: the texts are joined as they are, neither parsed into floats nor
    printed again (43,205 values for a day of five series), once the whole list has parsed as a
    flat list of numbers. Anything else (``NaN``, ``+Inf``) takes the slow way, value by value."""
    if len(values) != len(stamps):
        raise ValueError("as many times as values")
    first = _stamp(stamps[0]) if values else start
    last = _stamp(stamps[-1]) if values else start
    if (
        values
        and start <= first <= last <= start + (count - 1) * step
        and (first - start) % step == 0
        and (last - first) // step + 1 == len(values)
    ):
        # One run of points without a gap (the usual: a channel exported all along, or since
        # some time into the window, or until a moment ago): no index to compute.
        before = (first - start) // step
        raws = ["null"] * before + values + ["null"] * (count - before - len(values))
    else:
        raws = ["null"] * count
        for stamp, raw in zip(stamps, values, strict=True):
            index = (_stamp(stamp) - start) // step
            if 0 <= index < count:
                raws[index] = raw
    try:
        text = "[" + ",".join(raws) + "]"
        if _NUMBER_LIST.fullmatch(text, 1, len(text) - 1) and len(json.loads(text)) == count:
            return text
    except (TypeError, ValueError):  # not all texts, or no JSON numbers
        pass
    return "[" + ",".join(map(_number, raws)) + "]"


def _number(raw: Any) -> str:
    if raw == "null":
        return "null"
    try:
        value = float(raw)
    except (TypeError, ValueError) as exc:
        raise HistoryUnavailable(
            f"The history store answered a value that is no number: {raw!r:.40}"
        ) from exc
    return repr(value) if math.isfinite(value) else "null"


BREAKDOWNS = ("stage", "rule")


def channel_history(
    channel: str,
    window: str,
    series: list[str],
    *,
    by: tuple[str, ...] = (),
    end: float | None = None,
) -> bytes:
    """The channel's series over the window ending now (or at ``end``), as the API's JSON
    (UTF-8): one ``timestamps`` list for the whole answer and, per series, one value per
    timestamp (per stage and per rule too when ``by`` names them and the series has them).

    Built as text rather than through a serializer: a day at 10 s is 8,641 points a series,
    and the store's values are passed on as it wrote them (:func:`_values_json`)."""
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
    with _Store(settings.SLUICE_HISTORY_TIMEOUT) as store:
        texts = [store.query_range_text(query, start, stop, step) for _n, _b, query in jobs]
    nothing = "[" + ",".join(["null"] * count) + "]"
    found: dict[tuple[str, str], Any] = {}
    try:
        for (name, breakdown, _query), text in zip(jobs, texts, strict=True):
            result = _read_matrix(text)
            if breakdown == "channel":
                found[name, breakdown] = (
                    _values_json(result[0][1], result[0][2], start, step, count)
                    if result
                    else nothing
                )
            else:
                found[name, breakdown] = sorted(
                    (
                        str(labels.get(breakdown, "")),
                        _values_json(stamps, values, start, step, count),
                    )
                    for labels, stamps, values in result
                )
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise HistoryUnavailable(
            f"The history store answered in an unexpected form ({exc.__class__.__name__})."
        ) from exc
    entries = []
    for name in series:
        spec = SERIES[name]
        head = json.dumps({"name": name, "unit": spec.unit, "description": spec.description})
        lists = [
            "["
            + ",".join(
                f'{{"name":{json.dumps(label)},"values":{values}}}'
                for label, values in found.get((name, breakdown), [])
            )
            + "]"
            for breakdown in BREAKDOWNS
        ]
        entries.append(
            f'{head[:-1]},"values":{found[name, "channel"]},'
            f'"stages":{lists[0]},"rules":{lists[1]}}}'
        )
    head = json.dumps(
        {"channel": channel, "window": window, "step": step, "start": start, "end": stop}
    )
    timestamps = ",".join(map(str, range(start, stop + 1, step)))
    return (f'{head[:-1]},"timestamps":[{timestamps}],"series":[{",".join(entries)}]}}').encode()


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
