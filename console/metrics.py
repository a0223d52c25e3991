"""Prometheus metrics: what ``GET /metrics`` serves.

:class:`SluiceCollector` reads the database when Prometheus scrapes, in a fixed number of
queries whatever the number of channels (channels with their connector, tasks, workers),
and the reconcile loop's timings from Redis. The reconcile pass runs in the Celery worker,
not in the web process, so :func:`record_reconcile` keeps its histogram in one Redis hash
(``<prefix>:metrics:reconcile``: ``sum``, one cumulative count per bucket ``le:<bound>``
(``le:+Inf`` is the number of passes), ``last_success``, ``failures``), updated in one
MULTI/EXEC transaction per pass, so a scrape never sees half a pass; every web process
reads the same numbers, and several Celery workers add to them.

Metrics (labels in braces):

* ``sluice_channel_events_per_second{channel}`` — its events per second over the last 30 s,
  as the console shows it (:mod:`console.selectors.rates`; 0 while it is not running or not
  reporting: the last rate is no longer known);
* ``sluice_channel_lag{channel}`` — sum of its tasks' lag (records behind the source);
* ``sluice_channel_dead_letters_total{channel}`` — events sent to the dead-letter target
  (or skipped) so far, across restarts;
* ``sluice_channel_sink_retries_total{channel}`` — sink writes retried under a sink's
  ``retry`` policy so far, across restarts;
* ``sluice_channel_state{channel,state}`` and ``sluice_channel_target_state{channel,state}``
  — 1 for the current (shown / requested) state, 0 for the others; the shown state is
  ``NOT_REPORTING`` for a connector whose reports stopped (:mod:`console.selectors.reporting`,
  judged at the scrape by the console's clock), so ``sluice_channel_state{state="NOT_REPORTING"}
  == 1`` is the alert;
* ``sluice_channel_status_age_seconds{channel}`` — seconds since the console first read the
  connector's latest status report (its own clock; no sample before a first report), and
  ``sluice_channel_report_interval_seconds{channel}`` — how often that report promised to be
  rewritten (0: no promise); an age past twice the interval is NOT_REPORTING;
* ``sluice_task_lag{channel,task,topic,partition}``;
* ``sluice_rule_matched_total{channel,rule}``, ``sluice_rule_delivered_total{channel,rule}``,
  ``sluice_rule_failed_total{channel,rule}`` — a bus's per-rule counts since its driver
  started (a restarted driver counts from 0 again: a counter reset, which ``rate()``
  handles), and ``sluice_rule_matched_per_second{channel,rule}`` over the latest batch;
* ``sluice_dead_letters_redriven_total{channel}`` — dead letters redriven (sent back through
  the channel) from the console or the API, kept in one Redis hash
  (``<prefix>:metrics:redriven``, a field per channel) so every web process adds to it;
* ``sluice_channel_health_score{channel}`` (0..100) and
  ``sluice_channel_health_level{channel,level}`` (``idle``, ``ok``, ``warning``,
  ``critical``: 1 for the current one) — see :mod:`console.selectors.health`;
* the history's series (events in/out per channel and per stage, batch duration) — see
  :mod:`console.metrics_history`;
* ``sluice_workers{state}`` — runtime workers ALIVE / DEAD;
* ``sluice_workers_by_service{service}`` — runtime workers IN_SERVICE / DRAINING / DRAINED,
  and ``sluice_worker_service{worker,service}`` (1 for each worker's current one; see
  :mod:`console.services.workers`);
* ``sluice_reconcile_duration_seconds`` (histogram), ``sluice_reconcile_failures_total``,
  ``sluice_reconcile_last_success_timestamp_seconds`` (0 until a pass succeeds).
"""

from __future__ import annotations

import logging
import math
import time
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any, cast

import redis
from django.conf import settings
from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.utils import floatToGoString

from console import locks
from console.choices import ConnectorState, ShownState, TargetState, WorkerService, WorkerState
from console.metrics_history import history_metrics
from console.models import Channel, Task, Worker
from console.selectors import health, history, reporting
from console.selectors.rates import events_per_second

logger = logging.getLogger(__name__)

#: Upper bounds (seconds) of the reconcile duration histogram; a pass takes tens of ms.
RECONCILE_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def reconcile_key() -> str:
    return f"{settings.SLUICE_REDIS_PREFIX}:metrics:reconcile"


def _bucket_field(bound: float) -> str:
    return "le:+Inf" if math.isinf(bound) else f"le:{bound:g}"


def record_reconcile(duration: float, *, ok: bool, at: float | None = None) -> None:
    """Add one reconcile pass that took ``duration`` seconds (``ok``: it succeeded).

    Best effort: the control loop must not fail because its metrics cannot be written,
    so a Redis error is logged and dropped.
    """
    key = reconcile_key()
    try:
        pipe = locks.redis_client().pipeline(transaction=True)
        pipe.hincrbyfloat(key, "sum", duration)
        for bound in (*RECONCILE_BUCKETS, math.inf):
            if duration <= bound:
                pipe.hincrby(key, _bucket_field(bound), 1)
        if ok:
            pipe.hset(key, "last_success", repr(time.time() if at is None else at))
        else:
            pipe.hincrby(key, "failures", 1)
        pipe.execute()
    except redis.RedisError as exc:
        logger.warning("could not record the reconcile pass's metrics: %s", exc)


@contextmanager
def timed_reconcile() -> Iterator[None]:
    """Record the block as one reconcile pass: failed if it raises (the error propagates)."""
    started = time.monotonic()
    try:
        yield
    except BaseException:
        record_reconcile(time.monotonic() - started, ok=False)
        raise
    record_reconcile(time.monotonic() - started, ok=True)


def read_reconcile() -> dict[str, float] | None:
    """The reconcile hash as numbers (missing fields are 0); ``None`` if Redis is down."""
    try:
        # The console's client leaves responses undecoded: keys and values are bytes.
        raw = cast("dict[bytes, bytes]", locks.redis_client().hgetall(reconcile_key()))
    except redis.RedisError as exc:
        logger.warning("could not read the reconcile metrics from Redis: %s", exc)
        return None
    return {key.decode(): float(value) for key, value in raw.items()}


def redriven_key() -> str:
    return f"{settings.SLUICE_REDIS_PREFIX}:metrics:redriven"


def record_redriven(channel: str, count: int) -> None:
    """Add ``count`` redriven dead letters to the channel's counter (best effort: a Redis
    error is logged and dropped, the redrive itself already happened)."""
    try:
        locks.redis_client().hincrby(redriven_key(), channel, count)
    except redis.RedisError as exc:
        logger.warning("could not count the redrive of channel %s: %s", channel, exc)


def read_redriven() -> dict[str, float] | None:
    """Redriven dead letters per channel; ``None`` if Redis is down."""
    try:
        raw = cast("dict[bytes, bytes]", locks.redis_client().hgetall(redriven_key()))
    except redis.RedisError as exc:
        logger.warning("could not read the redrive counts from Redis: %s", exc)
        return None
    return {key.decode(): float(value) for key, value in raw.items()}


class SluiceCollector:
    """Builds every Sluice metric at scrape time (three queries and one Redis read).

    With ``teams`` (ids) only those teams' channels have series, and the site's own series
    (runtime workers, the control loop) are left out: what a team's member or service account
    scrapes. ``None``: everything (the site's metrics token, a site admin)."""

    def __init__(self, teams: Collection[int] | None = None) -> None:
        self.teams = teams

    def collect(self) -> Iterator[Metric]:
        yield from self.channel_metrics()
        if self.teams is None:
            yield from self.worker_metrics()
            yield from self.reconcile_metrics()

    def channel_metrics(self) -> Iterator[Metric]:
        events = GaugeMetricFamily(
            "sluice_channel_events_per_second",
            "Events per second the channel reads, over the last 30 s (as the console shows it).",
            labels=["channel"],
        )
        lag = GaugeMetricFamily(
            "sluice_channel_lag",
            "Records the channel is behind its source (sum of its tasks' lag).",
            labels=["channel"],
        )
        dead_letters = CounterMetricFamily(
            "sluice_channel_dead_letters",
            "Events the channel sent to the dead-letter target (or skipped).",
            labels=["channel"],
        )
        retries = CounterMetricFamily(
            "sluice_channel_sink_retries",
            "Sink writes the channel retried under a sink's retry policy.",
            labels=["channel"],
        )
        state = GaugeMetricFamily(
            "sluice_channel_state",
            "The channel's shown state (NOT_REPORTING when its reports stopped): 1 for the "
            "current one, 0 for the others.",
            labels=["channel", "state"],
        )
        status_age = GaugeMetricFamily(
            "sluice_channel_status_age_seconds",
            "Seconds since the console first read the channel's latest status report (the "
            "console's clock).",
            labels=["channel"],
        )
        report_interval = GaugeMetricFamily(
            "sluice_channel_report_interval_seconds",
            "How often the channel's latest status report promised to be rewritten (seconds; "
            "0: no promise). Not reporting once the status is older than twice this.",
            labels=["channel"],
        )
        target = GaugeMetricFamily(
            "sluice_channel_target_state",
            "The state the channel was asked to be in: 1 for the current one, 0 for the others.",
            labels=["channel", "state"],
        )
        task_lag = GaugeMetricFamily(
            "sluice_task_lag",
            "Records a task is behind its source partition.",
            labels=["channel", "task", "topic", "partition"],
        )
        at = reporting.now()
        channels = _channels(self.teams)
        silent = {
            channel["name"]: reporting.of_row(channel, at=at)
            for channel in channels
            if channel["connector__state"] is not None
        }
        task_rates: dict[str, list[float | None]] = defaultdict(list)
        lags: dict[str, float] = defaultdict(float)
        for task in _tasks(self.teams):
            channel = task["connector__channel__name"]
            if task["state"] == ConnectorState.RUNNING:
                task_rates[channel].append(task["rows_per_second"])
            if task["lag"] is not None:
                lags[channel] += task["lag"]
                task_lag.add_metric(
                    [
                        channel,
                        str(task["task_id"]),
                        task["topic"] or "",
                        "" if task["partition"] is None else str(task["partition"]),
                    ],
                    task["lag"],
                )
        for channel in channels:
            name = channel["name"]
            running = channel["connector__state"] == ConnectorState.RUNNING
            known = name not in silent or silent[name].reporting
            rate = events_per_second(channel["connector__stage_metrics"], task_rates[name])
            events.add_metric([name], (rate or 0.0) if running and known else 0.0)
            lag.add_metric([name], lags[name])
            dead_letters.add_metric([name], _all_dead_letters(channel))
            retries.add_metric([name], channel["connector__sink_retries"] or 0)
            judged = silent.get(name, reporting.REPORTING)
            shown = reporting.shown(channel["connector__state"], judged)
            _add_enum(state, [name], ShownState.values, shown)
            _add_enum(target, [name], TargetState.values, channel["target_state"])
            seen_at = channel["connector__status_seen_at"]
            if seen_at is not None:
                status_age.add_metric([name], max(0.0, (at - seen_at).total_seconds()))
                report_interval.add_metric([name], channel["connector__report_interval"] or 0.0)
        yield from (events, lag, dead_letters, retries, state, target, task_lag)
        yield from (status_age, report_interval)
        yield from _rule_metrics(channels)
        yield from _redriven_metric(channels)
        yield from _health_metrics(channels, lags, silent, at)
        yield from history_metrics(channels)

    def worker_metrics(self) -> Iterator[Metric]:
        """By liveness, by service and each worker's service, from one query."""
        rows = list(
            Worker.objects.order_by("worker_id").values_list("worker_id", "state", "service")
        )
        workers = GaugeMetricFamily(
            "sluice_workers", "Runtime workers, by liveness.", labels=["state"]
        )
        for value in WorkerState.values:
            workers.add_metric([value], sum(1 for _, state, _ in rows if state == value))
        yield workers
        by_service = GaugeMetricFamily(
            "sluice_workers_by_service",
            "Runtime workers, by service (IN_SERVICE, DRAINING, DRAINED).",
            labels=["service"],
        )
        each = GaugeMetricFamily(
            "sluice_worker_service",
            "1 for each runtime worker's service: IN_SERVICE, DRAINING or DRAINED.",
            labels=["worker", "service"],
        )
        for value in WorkerService.values:
            by_service.add_metric([value], sum(1 for _, _, service in rows if service == value))
        for worker_id, _, service in rows:
            each.add_metric([worker_id, service], 1)
        yield by_service
        yield each

    def reconcile_metrics(self) -> Iterator[Metric]:
        recorded = read_reconcile()
        if recorded is None:
            return  # Redis is down: leave the series absent rather than report zeros
        buckets = [
            (floatToGoString(bound), recorded.get(_bucket_field(bound), 0.0))
            for bound in (*RECONCILE_BUCKETS, math.inf)
        ]
        yield HistogramMetricFamily(
            "sluice_reconcile_duration_seconds",
            "How long reconcile passes take (passes that ran, failed or not).",
            buckets=buckets,
            sum_value=recorded.get("sum", 0.0),
        )
        yield CounterMetricFamily(
            "sluice_reconcile_failures",
            "Reconcile passes that failed (runtime unreachable or an error).",
            value=recorded.get("failures", 0.0),
        )
        yield GaugeMetricFamily(
            "sluice_reconcile_last_success_timestamp_seconds",
            "Unix time the last successful reconcile pass ended (0: none yet).",
            value=recorded.get("last_success", 0.0),
        )


def _redriven_metric(channels: Iterable[Mapping[str, Any]]) -> Iterator[Metric]:
    recorded = read_redriven()
    if recorded is None:
        return  # Redis is down: leave the series absent rather than report zeros
    redriven = CounterMetricFamily(
        "sluice_dead_letters_redriven",
        "Dead letters sent back through the channel (redrives from the console or the API).",
        labels=["channel"],
    )
    for channel in channels:
        redriven.add_metric([channel["name"]], recorded.get(channel["name"], 0.0))
    yield redriven


def _channels(teams: Collection[int] | None = None) -> list[Mapping[str, Any]]:
    """One query: every channel (of ``teams``) with its connector's state and dead letters."""
    rows = Channel.objects.all() if teams is None else Channel.objects.filter(team_id__in=teams)
    return list(
        rows.order_by("name").values(
            "name",
            "target_state",
            "connector__state",
            "connector__dead_letters",
            "connector__run_dead_letters",
            "connector__sink_retries",
            "connector__rule_metrics",
            "connector__stage_metrics",
            "connector__restart_attempts",
            "connector__state_changed_at",
            "connector__batch_seconds",
            "connector__last_status_at",
            *(f"connector__{name}" for name in reporting.ROW_FIELDS if name != "state"),
        )
    )


_RULE_COUNTS = (
    ("matched", "Events the bus's rule matched (since the channel was first started)."),
    ("delivered", "Matched events every target of the rule took (since first started)."),
    (
        "failed",
        "Matched events a target or the rule's transforms failed (since first started).",
    ),
)


def _rule_metrics(channels: Iterable[Mapping[str, Any]]) -> Iterator[Metric]:
    """The per-rule series of every bus, from the counts reconcile last stored."""
    counters = {
        key: CounterMetricFamily(f"sluice_rule_{key}", text, labels=["channel", "rule"])
        for key, text in _RULE_COUNTS
    }
    rate = GaugeMetricFamily(
        "sluice_rule_matched_per_second",
        "Events per second the bus's rule matched over the latest micro-batch.",
        labels=["channel", "rule"],
    )
    for channel in channels:
        rules = channel["connector__rule_metrics"]
        for counts in rules if isinstance(rules, list) else []:
            if not isinstance(counts, Mapping) or not isinstance(counts.get("rule"), str):
                continue
            labels = [channel["name"], counts["rule"]]
            for key, family in counters.items():
                family.add_metric(labels, _number(counts.get(key)))
            if "matched_per_second" in counts:
                rate.add_metric(labels, _number(counts["matched_per_second"]))
    yield from (*counters.values(), rate)


def channel_health(
    channel: Mapping[str, Any],
    lag: float | None,
    lag_before: float | None = None,
    judged: reporting.Reporting = reporting.REPORTING,
    at: float | None = None,
) -> health.Health:
    """The health of one row of :func:`_channels` (``lag``: its tasks' summed lag;
    ``lag_before``: the lag some minutes ago, from the history store; ``judged``: whether it
    still reports, at ``at``)."""
    return health.from_record(
        state=channel["connector__state"],
        target_state=channel["target_state"],
        stage_metrics=channel["connector__stage_metrics"],
        dead_letters=_all_dead_letters(channel),
        restarts=channel["connector__restart_attempts"],
        state_changed_at=channel["connector__state_changed_at"],
        last_status_at=channel["connector__last_status_at"],
        lag=lag,
        lag_before=lag_before,
        reporting=judged,
        now=at,
    )


def _health_metrics(
    channels: Iterable[Mapping[str, Any]],
    lags: Mapping[str, float],
    judged: Mapping[str, reporting.Reporting],
    at: datetime,
) -> Iterator[Metric]:
    """``sluice_channel_health_score{channel}`` (0..100) and
    ``sluice_channel_health_level{channel,level}`` (1 for the current level)."""
    score = GaugeMetricFamily(
        "sluice_channel_health_score",
        "The channel's health score: 100 healthy (or stopped on purpose) down to 0.",
        labels=["channel"],
    )
    level = GaugeMetricFamily(
        "sluice_channel_health_level",
        "The channel's health level: 1 for the current one, 0 for the others.",
        labels=["channel", "level"],
    )
    channels = list(channels)
    before = history.lags_before() if channels else {}
    for channel in channels:
        name = channel["name"]
        assessed = channel_health(
            channel,
            lags.get(name),
            before.get(name),
            judged.get(name, reporting.REPORTING),
            at.timestamp(),
        )
        score.add_metric([name], assessed.score)
        _add_enum(level, [name], health.LEVELS, assessed.level)
    yield from (score, level)


def _all_dead_letters(channel: Mapping[str, Any]) -> int:
    """The channel's drivers' dead letters and its runs' (``Connector.all_dead_letters``)."""
    return int(channel["connector__dead_letters"] or 0) + int(
        channel["connector__run_dead_letters"] or 0
    )


def _number(value: Any) -> float:
    """A count as the runtime reported it; anything that is not a number reads as 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    return float(value)


def _tasks(teams: Collection[int] | None = None) -> Iterable[Mapping[str, Any]]:
    """One query: every task (of ``teams``' channels) with its channel's name."""
    rows = Task.objects.all()
    if teams is not None:
        rows = rows.filter(connector__channel__team_id__in=teams)
    return rows.order_by("connector__channel__name", "task_id").values(
        "connector__channel__name",
        "task_id",
        "state",
        "topic",
        "partition",
        "lag",
        "rows_per_second",
    )


def _add_enum(
    family: GaugeMetricFamily, labels: list[str], values: Iterable[str], current: str
) -> None:
    for value in values:
        family.add_metric([*labels, value], 1 if value == current else 0)


def registry(teams: Collection[int] | None = None) -> CollectorRegistry:
    """A registry holding only Sluice's metrics (no per-process metrics of the web server,
    which would differ from one gunicorn worker to the next); of ``teams`` only, if given
    (:class:`SluiceCollector`)."""
    sluice = CollectorRegistry(auto_describe=False)
    sluice.register(SluiceCollector(teams))
    return sluice
