"""Channel health: the rules of :mod:`console.selectors.health` and its ``/metrics`` series."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from console import locks, metrics, services
from console.choices import ConnectorState
from console.models import Connector, Task, Worker
from console.runtime import set_runtime
from console.selectors.health import Signals, assess, signals_from_stages, sort_key


def running(**kwargs) -> Signals:
    return Signals(state="RUNNING", target_state="RUNNING", **kwargs)


def test_a_running_channel_without_failures_is_ok():
    health = assess(running(events_in=10_000, failed=0, lag=5, lag_before=7))
    assert (health.score, health.level) == (100, "ok")
    assert health.explanation == "Healthy: nothing to report."
    assert health.failure_rate == 0.0
    assert health.lag_trend == -2


def test_a_channel_stopped_on_purpose_is_idle_not_unhealthy():
    health = assess(Signals(state="STOPPED", target_state="STOPPED", restarts=0))
    assert health.level == "idle"
    assert health.explanation == "Stopped on purpose."


def test_a_failed_channel_is_critical_and_says_so():
    health = assess(Signals(state="FAILED", target_state="RUNNING", seconds_since_success=30))
    assert health.level == "critical"
    assert "The channel FAILED." in health.explanation
    assert health.score <= 40


@pytest.mark.parametrize(
    ("failed", "level"),
    [(0, "ok"), (5, "ok"), (10, "warning"), (499, "warning"), (500, "critical")],
)
def test_the_failure_rate_thresholds(failed, level):
    # 0.1 % warns, 5 % is critical (of 10,000 events that entered the source)
    health = assess(running(events_in=10_000, failed=failed))
    assert health.level == level
    if level != "ok":
        assert f"({failed} of 10000)" in health.explanation


def test_dead_letters_are_a_rate_of_the_events_in():
    health = assess(running(events_in=1000, dead_letters=100))
    assert health.level == "critical"
    assert health.dead_letter_rate == pytest.approx(0.1)
    assert "10.00% of events became dead letters (100)." in health.reasons


def test_a_growing_lag_warns_a_small_or_falling_one_does_not():
    assert assess(running(lag=20_000, lag_before=5_000)).level == "warning"
    assert (
        "Lag grows: 5000 → 20000 records." in assess(running(lag=20_000, lag_before=5_000)).reasons
    )
    assert assess(running(lag=600, lag_before=10)).level == "ok"  # grew, but by < 1000 records
    assert assess(running(lag=5_000, lag_before=20_000)).level == "ok"
    assert assess(running(lag=20_000)).level == "ok"  # no past value: no trend


def test_restarts_warn_then_become_critical():
    assert assess(running(restarts=1)).level == "warning"
    assert assess(running(restarts=3)).level == "critical"


def test_a_channel_asked_to_run_that_has_not_for_long_is_critical():
    stuck = Signals(state="PENDING", target_state="RUNNING", seconds_since_success=900)
    health = assess(stuck)
    assert health.level == "critical"
    assert "Last ran healthy 15 min ago." in health.reasons
    assert assess(
        Signals(state="PENDING", target_state="RUNNING", seconds_since_success=5)
    ).level == ("warning")


def test_the_fleet_sorts_worst_first():
    fleet = {
        "idle": assess(Signals(state="STOPPED", target_state="STOPPED")),
        "ok": assess(running(events_in=10)),
        "warn": assess(running(restarts=1)),
        "bad": assess(Signals(state="FAILED", target_state="RUNNING", restarts=5)),
        "worse-warn": assess(running(restarts=2, events_in=1000, failed=10)),
    }
    order = sorted(fleet, key=lambda name: sort_key(fleet[name]))
    assert order == ["bad", "worse-warn", "warn", "ok", "idle"]


def test_counts_come_from_the_stage_metrics():
    stages = [
        {"stage": "source", "index": None, "in": 100, "out": 100, "failed": 0},
        {"stage": "transform", "index": 0, "in": 100, "out": 97, "failed": 3},
        {"stage": "sink", "index": None, "in": 97, "out": 96, "failed": 1},
    ]
    assert signals_from_stages(stages) == (100, 4)
    assert signals_from_stages(None) == (0, 0)
    assert signals_from_stages([{"stage": "source", "in": "x"}, "junk"]) == (0, 0)


@pytest.mark.django_db
def test_health_is_exported_in_metrics(settings, redis_url, runtime, spec):
    settings.REDIS_URL = redis_url
    settings.SLUICE_REDIS_PREFIX = f"test-{uuid.uuid4().hex[:8]}"
    set_runtime(runtime)
    services.create_channel(name="quiet", spec=spec)  # never started: idle
    services.start_channel(services.create_channel(name="broken", spec=spec))
    Connector.objects.filter(channel__name="broken").update(
        state=ConnectorState.FAILED,
        restart_attempts=4,
        state_changed_at=timezone.now() - timedelta(minutes=20),
        stage_metrics=[{"stage": "source", "in": 1000, "out": 900, "failed": 100}],
    )
    try:
        text = generate_latest(metrics.registry()).decode()
    finally:
        locks.redis_client().delete(metrics.reconcile_key())
    samples: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    assert samples["sluice_channel_health_score"][(("channel", "quiet"),)] == 100
    assert samples["sluice_channel_health_score"][(("channel", "broken"),)] == 0
    levels = samples["sluice_channel_health_level"]
    assert {labels for labels, value in levels.items() if value == 1} == {
        (("channel", "broken"), ("level", "critical")),
        (("channel", "quiet"), ("level", "idle")),
    }
    assert len(levels) == 2 * 4


def fleet(spec) -> None:
    """quiet: never started (idle); good: running; broken: FAILED, restarting; warm: running
    with 1 % of its events failing."""
    Worker.objects.create(worker_id="w1", state="ALIVE")
    services.create_channel(name="quiet", spec=spec)
    for name in ("good", "broken", "warm"):
        services.start_channel(services.create_channel(name=name, spec=spec))
    Connector.objects.update(worker="w1", state=ConnectorState.RUNNING)
    Connector.objects.filter(channel__name="broken").update(
        state=ConnectorState.FAILED, restart_attempts=4, state_changed_at=timezone.now()
    )
    Connector.objects.filter(channel__name="warm").update(
        stage_metrics=[
            {
                "stage": "source",
                "index": None,
                "type": "kafka",
                "in": 1000,
                "out": 990,
                "failed": 10,
                "in_per_second": 1.0,
                "out_per_second": 1.0,
            }
        ]
    )
    for connector in Connector.objects.all():
        Task.objects.create(connector=connector, task_id=0, state="RUNNING", worker_id="w1", lag=12)


@pytest.mark.django_db
def test_the_health_api_sorts_the_fleet_worst_first(api, spec):
    fleet(spec)
    body = api.get("/api/v1/health/").json()
    assert [item["name"] for item in body] == ["broken", "warm", "good", "quiet"]
    assert [item["health"]["level"] for item in body] == ["critical", "warning", "ok", "idle"]
    warm = body[1]["health"]
    assert warm["failure_rate"] == pytest.approx(0.01)
    assert warm["explanation"] == "1.00% of events failed a stage (10 of 1000)."
    assert body[0]["health"]["restarts"] == 4
    by_name = api.get("/api/v1/health/?ordering=name").json()
    assert [item["name"] for item in by_name] == ["broken", "good", "quiet", "warm"]
    by_score = api.get("/api/v1/health/?ordering=-score").json()
    assert by_score[-1]["name"] == "broken"
    assert api.get("/api/v1/health/?ordering=size").status_code == 400


@pytest.mark.django_db
def test_the_health_api_costs_the_same_queries_for_more_channels(api, spec):
    """Each channel's recent failures come with the fleet's, in one query (not one each)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    fleet(spec)
    with CaptureQueriesContext(connection) as few:
        assert api.get("/api/v1/health/").status_code == 200
    for n in range(10):
        services.start_channel(services.create_channel(name=f"more-{n}", spec=spec))
    with CaptureQueriesContext(connection) as many:
        assert len(api.get("/api/v1/health/").json()) == 14
    assert len(many.captured_queries) == len(few.captured_queries)


@pytest.mark.django_db
def test_health_is_in_the_expanded_status(api, spec):
    fleet(spec)
    body = api.get("/api/v1/channels/?expand=status").json()
    levels = {item["name"]: item["status"]["health"]["level"] for item in body["results"]}
    assert levels == {"broken": "critical", "warm": "warning", "good": "ok", "quiet": "idle"}


@pytest.mark.django_db
def test_the_health_api_needs_the_right_to_view_channels(django_user_model):
    from rest_framework.test import APIClient

    nobody = django_user_model.objects.create_user("nobody", password="s3cret-pass")
    client = APIClient()
    assert client.get("/api/v1/health/").status_code in (401, 403)
    client.force_authenticate(nobody)
    assert client.get("/api/v1/health/").status_code == 403


# -- what the walk found: buses, failures that are over, a channel starting ----------------


@pytest.mark.django_db
def test_a_bus_s_rule_failures_and_dead_letters_count_against_it():
    from console.selectors.health import from_record

    stages = [{"stage": "source", "in": 300, "out": 300, "failed": 0}]
    rules = [
        {"rule": "eu", "matched": 150, "delivered": 120, "failed": 30},
        {"rule": "all", "matched": 300, "delivered": 300, "failed": 0},
    ]
    health = from_record(
        state="RUNNING",
        target_state="RUNNING",
        stage_metrics=stages,
        rule_metrics=rules,
        dead_letters=30,
        restarts=0,
        state_changed_at=None,
        lag=0,
    )
    assert health.level == "critical", health.reasons
    assert (health.failure_rate, health.dead_letter_rate) == (0.1, 0.1)
    assert "10.00% of events failed a stage (30 of 300)." in health.reasons


def test_a_channel_that_failed_recently_is_not_healthy_only_because_it_runs_now():
    assert assess(running(recent_failures=1)).reasons == ["Failed once in the last hour."]
    assert assess(running(recent_failures=1)).level == "warning"
    five = assess(running(recent_failures=5))
    assert (five.level, five.reasons) == ("critical", ["Failed 5 times in the last hour."])


def test_a_channel_starting_is_not_a_warning_until_its_start_takes_too_long():
    starting = Signals(state="UNASSIGNED", target_state="RUNNING", seconds_since_success=4)
    health = assess(starting)
    assert (health.score, health.level, health.reasons) == (
        100,
        "ok",
        ["Starting (UNASSIGNED): a warning if not RUNNING within 90 s."],
    )
    late = assess(Signals(state="UNASSIGNED", target_state="RUNNING", seconds_since_success=95))
    assert late.level == "warning" and late.reasons[0] == "Asked to run but UNASSIGNED."


@pytest.mark.django_db
def test_recent_failures_are_counted_from_the_connector_s_failed_transitions(spec):
    from console.choices import SubjectType
    from console.models import Channel, LifecycleEvent
    from console.selectors.health import recent_failures

    channel = services.create_channel(name="flaky", spec=spec)
    now = timezone.now()

    def failed(minutes_ago: int, from_state: str = "RUNNING") -> None:
        LifecycleEvent.objects.create(
            channel=channel,
            subject_type=SubjectType.CONNECTOR,
            subject_id="flaky",
            from_state=from_state,
            to_state="FAILED",
            actor="system:reconcile",
            created_at=now - timedelta(minutes=minutes_ago),
        )

    failed(5)
    failed(30)
    failed(31, from_state="FAILED")  # recorded again while FAILED: not a new failure
    failed(90)  # over an hour ago
    assert recent_failures([channel.pk], at=now) == {channel.pk: 2}
    assert recent_failures([Channel.objects.get(name="flaky").pk + 1000], at=now) == {}
