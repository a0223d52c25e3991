"""A connector that stopped reporting is shown NOT_REPORTING, judged when read by the console's
clock (:mod:`console.selectors.reporting`): never RUNNING later than twice its report interval
after the control loop first read its last report, whatever the reporting host's clock says,
and whether or not a control-loop pass ran since."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from console import metrics, services
from console.choices import ConnectorState, ShownState, TargetState
from console.models import Channel, Connector, LifecycleEvent
from console.selectors import health, reporting
from console.services import channel_health
from runtime_adapter.base import TaskStatus
from runtime_adapter.states import State

pytestmark = pytest.mark.django_db

NOW = 1_700_000_000.0
INTERVAL = 10.0
CHANNELS = "/api/v1/channels/"


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


@pytest.fixture
def clock(monkeypatch):
    """The console's clock, moved by the test (``clock.now = …``)."""

    class Clock:
        now = NOW

    monkeypatch.setattr(reporting, "now", lambda: at(Clock.now))
    return Clock


@pytest.fixture(autouse=True)
def _fleet_refresh_every_pass(monkeypatch):
    # Every pass refreshes every channel's stored level (the module keeps its last time).
    monkeypatch.setattr(channel_health, "_last_fleet_refresh", float("-inf"))
    monkeypatch.setattr(channel_health, "FLEET_REFRESH_SECONDS", 0.0)


def report(runtime, name="orders", *, updated_at, state=State.RUNNING, interval=INTERVAL):
    runtime.report(
        name,
        state,
        "w1",
        updated_at=updated_at,
        report_interval=interval,
        tasks=[TaskStatus(task_id=0, state=state, worker_id="w1", offset=5, lag=2)],
    )


def reconcile(runtime, now):
    runtime.heartbeat("w1", at=now)  # the worker itself stays alive throughout
    return services.reconcile(runtime=runtime, now=now)


@pytest.fixture
def running(runtime, spec, clock):
    """``orders`` RUNNING on w1, its report first read by the pass at NOW."""
    runtime.heartbeat("w1", at=NOW)
    services.reconcile(runtime=runtime, now=NOW)
    services.start_channel(services.create_channel(name="orders", spec=spec))
    report(runtime, updated_at=NOW)
    reconcile(runtime, NOW)
    connector = Connector.objects.get(runtime_id="orders")
    assert connector.state == ConnectorState.RUNNING
    return connector


def fresh(name="orders") -> Connector:
    return Connector.objects.get(runtime_id=name)


# -- the rule ------------------------------------------------------------------------------------


def test_a_refreshed_state_is_believed_for_twice_its_interval_by_the_readers_clock():
    seen = at(NOW)
    deadline = reporting.deadline(ConnectorState.RUNNING, seen, 10.0)
    assert deadline == at(NOW + 20)

    def judge(now: float, state: str = ConnectorState.RUNNING) -> reporting.Reporting:
        return reporting.judge(
            state=state, seen_at=seen, deadline_at=deadline, report_interval=10.0, at=at(now)
        )

    assert judge(NOW + 20).reporting
    silent = judge(NOW + 21)
    assert not silent.reporting
    assert (silent.since, silent.silent_seconds, silent.report_interval) == (seen, 21.0, 10.0)
    assert silent.reason == (
        "not reporting since 2023-11-14T22:13:20+00:00 (no status for 21 s; reports every 10 s)"
    )
    assert reporting.shown(ConnectorState.RUNNING, silent) == ShownState.NOT_REPORTING
    assert reporting.shown(None, reporting.REPORTING) == ShownState.STOPPED


@pytest.mark.parametrize("state", [ConnectorState.FAILED, ConnectorState.STOPPED])
def test_final_states_have_no_deadline(state):
    assert reporting.deadline(state, at(NOW), 10.0) is None
    judged = reporting.judge(
        state=state, seen_at=at(NOW), deadline_at=at(NOW + 20), report_interval=10, at=at(NOW + 99)
    )
    assert judged.reporting


@pytest.mark.parametrize(
    "state",
    [
        ConnectorState.RUNNING,
        ConnectorState.PAUSED,
        ConnectorState.RESTARTING,
        ConnectorState.UNASSIGNED,
    ],
)
def test_states_an_owner_keeps_refreshing_have_one(state):
    assert reporting.deadline(state, at(NOW), 5.0) == at(NOW + 10)


def test_a_report_that_promises_no_refresh_has_no_deadline():
    assert reporting.deadline(ConnectorState.RUNNING, at(NOW), 0.0) is None


# -- the control loop dates reports by its own clock ---------------------------------------------


def test_the_pass_dates_a_new_report_and_a_report_read_again_keeps_its_date(runtime, running):
    assert (running.status_seen_at, running.report_interval) == (at(NOW), INTERVAL)
    assert running.status_deadline_at == at(NOW + 20)

    reconcile(runtime, NOW + 8)  # the same report, read again
    assert fresh().status_seen_at == at(NOW)

    report(runtime, updated_at=NOW + 9)  # a new one
    reconcile(runtime, NOW + 12)
    connector = fresh()
    assert connector.status_seen_at == at(NOW + 12)
    assert connector.status_deadline_at == at(NOW + 32)


@pytest.mark.parametrize("skew", [-3600.0, 3600.0, -1e6])
def test_the_reporting_hosts_clock_does_not_matter(runtime, running, clock, api, skew):
    # A driver whose clock is an hour (or days) off, refreshing every pass: reporting.
    for tick in range(1, 6):
        report(runtime, updated_at=NOW + skew + 10 * tick)
        reconcile(runtime, NOW + 10 * tick)
    clock.now = NOW + 50 + 19
    assert api.get(f"{CHANNELS}orders/").json()["state"] == "RUNNING"
    # The same host stops refreshing: not reporting twice its interval after the last read.
    reconcile(runtime, NOW + 60)
    clock.now = NOW + 50 + 21
    assert api.get(f"{CHANNELS}orders/").json()["state"] == "NOT_REPORTING"


def test_a_report_dated_in_the_future_is_not_believed_for_longer(runtime, running, clock, api):
    report(runtime, updated_at=NOW + 86_400)  # a driver clock a day ahead, then silent
    reconcile(runtime, NOW + 5)
    clock.now = NOW + 5 + 21
    assert api.get(f"{CHANNELS}orders/").json()["state"] == "NOT_REPORTING"


def test_a_vanished_status_keeps_its_deadline(runtime, running, clock, api):
    runtime.statuses.clear()  # the store emptied: nothing to read
    reconcile(runtime, NOW + 5)
    assert fresh().state == ConnectorState.RUNNING
    clock.now = NOW + 21
    assert api.get(f"{CHANNELS}orders/").json()["state"] == "NOT_REPORTING"


def test_a_dead_workers_connector_is_unassigned_without_deadline(runtime, running, settings):
    settings.SLUICE_WORKER_SESSION_TIMEOUT = 10
    services.reconcile(runtime=runtime, now=NOW + 30)  # no heartbeat since NOW
    connector = fresh()
    assert connector.state == ConnectorState.UNASSIGNED
    assert connector.status_deadline_at is None


def test_a_failure_has_no_deadline(runtime, running, clock, api):
    runtime.report(
        "orders", State.FAILED, "w1", updated_at=NOW + 1, trace="boom", report_interval=10
    )
    Channel.objects.filter(name="orders").update(restart_policy="never")
    reconcile(runtime, NOW + 2)
    assert fresh().status_deadline_at is None
    clock.now = NOW + 600
    assert api.get(f"{CHANNELS}orders/").json()["state"] == "FAILED"


def test_a_users_restart_is_not_judged_by_the_old_drivers_deadline(runtime, running, clock, api):
    services.restart_channel(Channel.objects.get(name="orders"))
    assert fresh().status_deadline_at is None
    clock.now = NOW + 100
    assert api.get(f"{CHANNELS}orders/").json()["state"] == "RESTARTING"


def test_a_report_read_after_the_deadline_brings_it_back(runtime, running, clock, api):
    clock.now = NOW + 30
    assert api.get(f"{CHANNELS}orders/").json()["state"] == "NOT_REPORTING"
    report(runtime, updated_at=NOW + 29)
    reconcile(runtime, NOW + 30)
    assert api.get(f"{CHANNELS}orders/").json()["state"] == "RUNNING"
    assert Channel.objects.get(name="orders").health_level == "ok"


def test_the_pass_stores_the_critical_level_of_a_silent_connector(runtime, running):
    assert Channel.objects.get(name="orders").health_level == "ok"
    reconcile(runtime, NOW + 25)  # the same report: no new one since NOW
    assert Channel.objects.get(name="orders").health_level == "critical"


# -- an outage: no pass at all, the console's clock moves on --------------------------------------


def test_an_outage_is_shown_by_every_reader_without_a_pass(runtime, running, clock, api):
    runtime.unavailable = ConnectionError("Redis is down")  # no pass could run now
    clock.now = NOW + 19
    assert api.get(f"{CHANNELS}orders/").json()["state"] == "RUNNING"

    clock.now = NOW + 45
    channel = api.get(f"{CHANNELS}orders/").json()
    assert channel["state"] == "NOT_REPORTING"

    status = api.get(f"{CHANNELS}orders/status").json()
    assert status["state"] == "NOT_REPORTING"
    assert status["reported_state"] == "RUNNING"
    assert status["not_reporting_since"] == "2023-11-14T22:13:20Z"
    assert status["status_seen_at"] == "2023-11-14T22:13:20Z"
    assert status["report_interval"] == INTERVAL
    assert [task["state"] for task in status["tasks"]] == ["NOT_REPORTING"]
    health = status["health"]
    assert health["level"] == "critical"
    assert health["reasons"][0] == (
        "Not reporting since 2023-11-14T22:13:20+00:00 (no status for 45 s; reports every "
        "10 s): its last state is unknown."
    )
    assert health["last_success_at"] == "2023-11-14T22:13:20Z"

    # The list: filtered, sorted and shown by the same rule, the stored level notwithstanding.
    assert Channel.objects.get(name="orders").health_level == "ok"
    names = lambda query: [c["name"] for c in api.get(f"{CHANNELS}?{query}").json()["results"]]  # noqa: E731
    assert names("state=RUNNING") == []
    assert names("state=NOT_REPORTING") == ["orders"]
    assert names("health=critical") == ["orders"]
    assert names("health=ok") == []
    listed = api.get(f"{CHANNELS}?expand=status").json()["results"][0]
    assert (listed["state"], listed["status"]["state"]) == ("NOT_REPORTING", "NOT_REPORTING")

    every = api.get("/api/v1/health/").json()
    assert [(c["name"], c["state"], c["health"]["level"]) for c in every] == [
        ("orders", "NOT_REPORTING", "critical")
    ]

    connect = api.get("/connect/connectors/orders/status").json()
    assert connect["connector"]["state"] == "UNASSIGNED"
    assert connect["connector"]["trace"].startswith("not reporting since 2023-11-14T22:13:20")
    assert [task["state"] for task in connect["tasks"]] == ["UNASSIGNED"]
    task = api.get("/connect/connectors/orders/tasks/0/status").json()
    assert task["state"] == "UNASSIGNED"
    assert "not reporting since" in task["trace"]

    samples = scrape()
    state = samples["sluice_channel_state"]
    assert state[(("channel", "orders"), ("state", "NOT_REPORTING"))] == 1.0
    assert state[(("channel", "orders"), ("state", "RUNNING"))] == 0.0
    assert samples["sluice_channel_status_age_seconds"] == {(("channel", "orders"),): 45.0}
    assert samples["sluice_channel_report_interval_seconds"] == {(("channel", "orders"),): 10.0}
    assert samples["sluice_channel_events_per_second"] == {(("channel", "orders"),): 0.0}
    level = samples["sluice_channel_health_level"]
    assert level[(("channel", "orders"), ("level", "critical"))] == 1.0


def test_the_list_sorts_a_silent_channel_as_critical_and_as_needing_attention(
    runtime, running, spec, clock, api
):
    services.start_channel(services.create_channel(name="alpha", spec=spec))
    report(runtime, "alpha", updated_at=NOW + 30)
    runtime.report("orders", State.RUNNING, "w1", updated_at=NOW, report_interval=INTERVAL)
    reconcile(runtime, NOW + 30)  # alpha fresh, orders silent since NOW (stored: critical)
    Channel.objects.filter(name="orders").update(health_level="ok")  # as a pass ago
    clock.now = NOW + 31
    names = lambda query: [c["name"] for c in api.get(f"{CHANNELS}?{query}").json()["results"]]  # noqa: E731
    assert names("ordering=health") == ["orders", "alpha"]
    assert names("ordering=-health") == ["alpha", "orders"]
    assert names("ordering=state") == ["orders", "alpha"]
    assert names("state=RUNNING&state=NOT_REPORTING") == ["alpha", "orders"]


def test_a_channel_never_started_has_no_reporting_fields(api, spec):
    services.create_channel(name="idle", spec=spec)
    status = api.get(f"{CHANNELS}idle/status").json()
    assert status["state"] == "STOPPED"
    assert status["reported_state"] == "STOPPED"
    assert (status["not_reporting_since"], status["status_seen_at"]) == (None, None)
    assert status["report_interval"] is None


def test_a_stopped_channel_is_idle_not_silent(runtime, running, clock, api):
    services.stop_channel(Channel.objects.get(name="orders"))
    runtime.report("orders", State.STOPPED, "w1", updated_at=NOW + 1)  # one-off, no promise
    reconcile(runtime, NOW + 2)
    assert Channel.objects.get(name="orders").target_state == TargetState.STOPPED
    clock.now = NOW + 3600
    status = api.get(f"{CHANNELS}orders/status").json()
    assert (status["state"], status["health"]["level"]) == ("STOPPED", "idle")


def test_the_schema_names_the_shown_states(api):
    schema = api.get("/api/schema/?format=json").json()
    components = schema["components"]["schemas"]
    status = components["ChannelStatus"]["properties"]
    for name in ("reported_state", "not_reporting_since", "status_seen_at", "report_interval"):
        assert name in status, name
    channel_state = components["Channel"]["properties"]["state"]
    enum = components[channel_state["allOf"][0]["$ref"].rsplit("/", 1)[1]]["enum"]
    assert "NOT_REPORTING" in enum


def scrape() -> dict[str, dict[tuple, float]]:
    text = generate_latest(metrics.registry()).decode()
    samples: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def test_deadline_is_stored_from_the_passes_clock_not_the_report():
    # The one stored date a reader compares with its clock is the console's own.
    seen = at(NOW)
    assert reporting.deadline(ConnectorState.RUNNING, seen, 2.5) == seen + timedelta(seconds=5)


def test_the_cluster_view_judges_the_store_s_status_the_same_way(runtime, running, clock, api):
    clock.now = NOW + 15
    rows = api.get("/api/v1/cluster/").json()["channels"]
    assert [(row["name"], row["state"]) for row in rows] == [("orders", "RUNNING")]
    clock.now = NOW + 21  # the store still holds the same report: nobody refreshed it
    rows = api.get("/api/v1/cluster/").json()["channels"]
    assert [(row["name"], row["state"]) for row in rows] == [("orders", "NOT_REPORTING")]


def test_health_of_a_silent_paused_channel_is_critical_with_its_reason():
    silent = reporting.judge(
        state=ConnectorState.PAUSED,
        seen_at=at(NOW),
        deadline_at=at(NOW + 10),
        report_interval=5.0,
        at=at(NOW + 90),
    )
    assessed = health.from_record(
        state=ConnectorState.PAUSED,
        target_state=TargetState.PAUSED,
        stage_metrics=[],
        dead_letters=0,
        restarts=0,
        state_changed_at=at(NOW - 3600),
        lag=None,
        reporting=silent,
        now=NOW + 90,
    )
    assert (assessed.level, assessed.score) == ("critical", 40)
    assert assessed.reasons == [
        "Not reporting since 2023-11-14T22:13:20+00:00 (no status for 90 s; reports every 5 s): "
        "its last state is unknown."
    ]
    assert assessed.last_success_at == at(NOW)


def test_the_admin_shows_the_shown_state(runtime, running, clock, client, django_user_model):
    admin = django_user_model.objects.create_superuser("root", password="pw-for-tests-1")
    client.force_login(admin)
    clock.now = NOW + 21
    page = client.get("/admin/console/channel/").content.decode()
    assert "NOT_REPORTING" in page


def test_the_loop_records_each_way_once(runtime, running, clock):
    def silences():
        rows = LifecycleEvent.objects.filter(subject_id="orders").order_by("id")
        return [
            (e.from_state, e.to_state, e.reason)
            for e in rows
            if "NOT_REPORTING" in (e.from_state, e.to_state)
        ]

    reconcile(runtime, NOW + 15)
    assert silences() == []
    reconcile(runtime, NOW + 25)
    reconcile(runtime, NOW + 35)
    assert silences() == [
        (
            "RUNNING",
            "NOT_REPORTING",
            "not reporting since 2023-11-14T22:13:20+00:00 (no status for 25 s; reports every "
            "10 s)",
        )
    ]
    assert fresh().state == ConnectorState.RUNNING  # stored as last observed
    report(runtime, updated_at=NOW + 40)
    reconcile(runtime, NOW + 40)
    reconcile(runtime, NOW + 41)
    assert silences()[1:] == [("NOT_REPORTING", "RUNNING", "reports again")]
