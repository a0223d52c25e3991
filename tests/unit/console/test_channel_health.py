"""Each channel's health level kept in the database (``Channel.health_level``): stored by the
control loop's pass, at once on a lifecycle change, the same level its own ``status.health``
gives, and what the fleet list filters and sorts by in SQL (a fixed number of queries)."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from console import services
from console.models import Channel, Connector
from console.services import channel_health
from runtime_adapter.states import State

pytestmark = pytest.mark.django_db

CHANNELS = "/api/v1/channels/"


def reconcile(runtime, now: float | None = None):
    return services.reconcile(runtime=runtime, now=time.time() if now is None else now)


def stored() -> dict[str, str]:
    return dict(Channel.objects.values_list("name", "health_level"))


def listed(api, query: str) -> list[str]:
    response = api.get(f"{CHANNELS}?{query}")
    assert response.status_code == 200, response.content
    return [row["name"] for row in response.json()["results"]]


@pytest.fixture
def three(runtime, spec):
    """w1 alive; ``ok`` RUNNING, ``bad`` FAILED, ``off`` never started."""
    runtime.heartbeat("w1")
    reconcile(runtime)
    for name in ("ok", "bad", "off"):
        channel = services.create_channel(name=name, spec=spec)
        if name != "off":
            services.start_channel(channel)
    runtime.report("ok", State.RUNNING, "w1", updated_at=time.time())
    runtime.report("bad", State.FAILED, "w1", trace="boom", updated_at=time.time())
    Channel.objects.update(restart_policy="never")
    reconcile(runtime)
    return runtime


def test_the_control_loop_stores_each_level_as_the_channel_s_status_says(api, three):
    assert stored() == {"ok": "ok", "bad": "critical", "off": "idle"}
    for row in api.get(f"{CHANNELS}?expand=status").json()["results"]:
        assert row["status"]["health"]["level"] == stored()[row["name"]], row["name"]
    assert listed(api, "health=critical") == ["bad"]
    assert listed(api, "health=ok&health=idle") == ["off", "ok"]
    assert listed(api, "ordering=health") == ["bad", "ok", "off"]
    assert listed(api, "ordering=-health") == ["off", "ok", "bad"]
    assert channel_health.refresh() == 0  # nothing changed: nothing written


def test_a_lifecycle_change_is_listed_under_its_new_level_at_once(api, three):
    services.start_channel(Channel.objects.get(name="off"))  # asked to run, not placed yet

    assert stored()["off"] == "ok"  # starting: not a warning (within the grace)
    assert sorted(listed(api, "health=ok")) == ["off", "ok"]
    status = api.get(f"{CHANNELS}off/status").json()
    assert status["health"]["explanation"].startswith("Starting (UNASSIGNED"), status["health"]
    body = {"action": "stop", "names": ["ok", "off"]}
    assert api.post(f"{CHANNELS}bulk", body, format="json").json()["ok"] == 2
    assert stored()["off"] == "idle"  # stopped, its connector never ran


def test_a_time_rule_moves_the_level_on_a_later_pass(three):
    """Asked to run but not running for 10 minutes: critical, seen by a pass then."""
    runtime = three
    runtime.report("ok", State.PAUSED, "w1", updated_at=time.time())  # asked to run
    reconcile(runtime)
    assert stored()["ok"] == "warning"
    later = time.time() + 700
    runtime.heartbeat("w1", at=later)
    reconcile(runtime, now=later)
    assert stored()["ok"] == "critical"


def test_the_health_filter_costs_the_same_queries_for_more_channels(api, three, spec):
    url = f"{CHANNELS}?expand=status&health=critical&health=warning&ordering=health"
    with CaptureQueriesContext(connection) as few:
        assert listed(api, url.split("?", 1)[1]) == ["bad"]
    for n in range(20):
        services.start_channel(services.create_channel(name=f"more-{n}", spec=spec))
    Connector.objects.filter(channel__name__startswith="more-").update(state="FAILED")
    channel_health.refresh()
    with CaptureQueriesContext(connection) as many:
        assert len(api.get(url).json()["results"]) == 21
    assert len(many.captured_queries) == len(few.captured_queries)


def test_the_control_loop_refreshes_the_whole_fleet_every_few_seconds(three):
    """Each pass: the channels whose connector changed state; every FLEET_REFRESH_SECONDS:
    every channel (a level gone stale is put right then)."""
    at = time.time() + 1000
    ok = Channel.objects.get(name="ok").pk
    Channel.objects.filter(pk=ok).update(health_level="critical")
    assert channel_health.refresh_after_pass([], now=at) == 1  # due: the whole fleet
    Channel.objects.filter(pk=ok).update(health_level="critical")
    assert channel_health.refresh_after_pass([], now=at + 1) == 0  # not due: none asked
    assert channel_health.refresh_after_pass([ok], now=at + 2) == 1
    Channel.objects.filter(pk=ok).update(health_level="critical")
    assert channel_health.refresh_after_pass([], now=at + channel_health.FLEET_REFRESH_SECONDS) == 1
