"""One action puts the saved revision to work from any state, and says first what it will do:
``GET /channels/{name}/deploy`` (the plan), ``POST`` (the deploy)."""

from __future__ import annotations

import pytest

from console.choices import ConnectorState, TargetState
from console.models import Channel, Connector, Worker
from tests.unit.console.test_api_buses import bus, http_sink, kafka_sink

pytestmark = pytest.mark.django_db

CHANNELS = "/api/v1/channels/"


def plan(api, name="orders") -> dict:
    response = api.get(f"{CHANNELS}{name}/deploy")
    assert response.status_code == 200, response.json()
    return response.json()


def deploy(api, name="orders") -> dict:
    response = api.post(f"{CHANNELS}{name}/deploy")
    assert response.status_code == 202, response.json()
    return response.json()


def started(api, spec, runtime, name="orders", state=ConnectorState.RUNNING) -> None:
    assert api.post(CHANNELS, {"name": name, "spec": spec}, format="json").status_code == 201
    assert api.post(f"{CHANNELS}{name}/start").status_code == 202
    Worker.objects.get_or_create(worker_id="w1", defaults={"state": "ALIVE"})
    Connector.objects.filter(runtime_id=name).update(worker="w1", state=state)
    runtime.calls.clear()


def save(api, spec, name="orders") -> None:
    response = api.patch(f"{CHANNELS}{name}/", {"spec": spec}, format="json")
    assert response.status_code == 200, response.json()


def test_a_never_started_channel_starts_with_its_first_revision(api, spec, runtime):
    api.post(CHANNELS, {"name": "orders", "spec": spec}, format="json")

    shown = plan(api)
    assert (shown["running_revision"], shown["saved_revision"], shown["effect"]) == (
        None,
        1,
        "start",
    )
    assert shown["summary"] == "Starts the channel with revision 1, for the first time."
    assert runtime.calls == []  # a plan changes nothing

    done = deploy(api)
    assert done["effect"] == "start"
    assert runtime.deployments["orders"].revision == 1
    assert Channel.objects.get().target_state == TargetState.RUNNING


def test_a_running_channel_restarts_with_the_saved_revision_and_names_what_changed(
    api, spec, runtime
):
    started(api, spec, runtime)
    spec["sink"]["config"]["topic"] = "other"
    save(api, spec)

    shown = plan(api)
    assert (shown["running_revision"], shown["saved_revision"], shown["effect"]) == (
        1,
        2,
        "restart",
    )
    assert "from its checkpoint" in shown["summary"] and "none is lost" in shown["summary"]
    assert shown["changed"] == ["sink.config.topic"]

    deploy(api)
    assert runtime.deployments["orders"].revision == 2
    status = api.get(f"{CHANNELS}orders/status").json()
    assert (status["revision"], status["drift"]) == (2, False)
    assert plan(api)["effect"] == "none"


def test_a_failed_channel_whose_fix_was_saved_starts_again_with_the_fix(api, spec, runtime):
    started(api, spec, runtime, state=ConnectorState.FAILED)
    spec["sink"]["config"]["topic"] = "fixed"
    save(api, spec)

    shown = plan(api)
    assert shown["effect"] == "restart"
    assert shown["summary"].startswith("The failed connector starts again with revision 2")

    deploy(api)
    assert runtime.deployments["orders"].revision == 2
    assert runtime.calls_named("restart") == [("orders",)]  # a new generation: it runs again


def test_a_failed_channel_without_a_new_revision_is_started_again(api, spec, runtime):
    started(api, spec, runtime, state=ConnectorState.FAILED)
    assert plan(api)["effect"] == "restart"
    deploy(api)
    assert runtime.calls_named("restart") == [("orders",)]


def test_a_paused_channel_stays_paused_with_the_saved_revision(api, spec, runtime):
    started(api, spec, runtime)
    api.post(f"{CHANNELS}orders/pause")
    spec["sink"]["config"]["topic"] = "other"
    save(api, spec)

    assert "stays paused" in plan(api)["summary"]
    deploy(api)
    assert runtime.deployments["orders"].revision == 2
    assert Channel.objects.get().target_state == TargetState.PAUSED


def test_a_stopped_channel_starts_from_its_checkpoint(api, spec, runtime):
    started(api, spec, runtime)
    api.post(f"{CHANNELS}orders/stop")

    shown = plan(api)
    assert (shown["effect"], shown["summary"]) == (
        "start",
        "Starts the channel with revision 1, from its checkpoint.",
    )
    deploy(api)
    assert Channel.objects.get().target_state == TargetState.RUNNING


def test_nothing_to_deploy_changes_nothing(api, spec, runtime):
    started(api, spec, runtime)
    shown = deploy(api)
    assert shown["effect"] == "none" and "already deployed" in shown["summary"]
    assert runtime.calls == []


def rule(name: str, amount: int) -> dict:
    pattern = {"data": {"amount": [{"numeric": [">", amount]}]}}
    return {"name": name, "pattern": pattern, "sinks": [kafka_sink(name), http_sink("PW-1")]}


def test_a_running_bus_whose_rules_alone_changed_takes_them_live(api, runtime):
    started(api, bus(rule("big", 100), rule("huge", 1000)), runtime)
    spec = api.get(f"{CHANNELS}orders/").json()["spec"]  # its secrets as markers: kept
    spec["rules"][0]["pattern"]["data"]["amount"] = [{"numeric": [">", 200]}]
    save(api, spec)

    shown = plan(api)
    assert shown["effect"] == "live", shown
    assert "without a restart" in shown["summary"]
    assert shown["changed"] == ["rules[big].pattern"]

    spec["source"]["config"]["topics"] = ["orders", "refunds"]
    save(api, spec)
    assert plan(api)["effect"] == "restart"  # more than the rules: a restart


def test_a_viewer_may_read_the_plan_but_not_deploy(api, spec, runtime, django_user_model):
    from rest_framework.test import APIClient

    from console.permissions import VIEWER, grant_role

    api.post(CHANNELS, {"name": "orders", "spec": spec}, format="json")
    viewer = django_user_model.objects.create_user("vera", password="x-pass-123")
    grant_role(viewer, VIEWER)
    client = APIClient()
    client.force_authenticate(viewer)
    assert client.get(f"{CHANNELS}orders/deploy").status_code == 200
    refused = client.post(f"{CHANNELS}orders/deploy")
    assert refused.status_code == 403 and "deploy channels" in refused.json()["detail"]
    assert runtime.calls == []
