"""Schema discovery in the console: the switch (API, deployment, restart), the merge of
sampled events into the channel's schema, the registry versions, when fields were first seen."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from console.models import (
    AuditEvent,
    ChannelDiscovery,
    Connector,
    LifecycleEvent,
    SubjectVersion,
    Worker,
)
from console.permissions import grant_role
from console.services.discovery import collect_samples
from console.tasks import collect_discovered

pytestmark = pytest.mark.django_db

CHANNELS = "/api/v1/channels/"
T0 = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)


def event(data: dict, n: int = 1) -> dict:
    return {"id": f"e{n}", "source": "s", "specversion": "1.0", "type": "order", "data": data}


def started(api, spec, name="orders"):
    assert api.post(CHANNELS, {"name": name, "spec": spec}, format="json").status_code == 201
    assert api.post(f"{CHANNELS}{name}/start").status_code == 202


def test_discovery_is_off_until_turned_on_and_then_deployed_with_it(api, spec, runtime):
    started(api, spec)
    body = api.get(f"{CHANNELS}orders/discovery").json()
    assert body["enabled"] is False and body["schema"] is None and body["fields"] == []
    assert body["subject"] == "orders-discovered"
    assert runtime.deployments["orders"].discovery is False
    runtime.calls.clear()

    response = api.put(f"{CHANNELS}orders/discovery", {"enabled": True}, format="json")

    assert response.status_code == 200, response.content
    assert response.json()["enabled"] is True
    assert runtime.deployments["orders"].discovery is True  # re-deployed with it…
    assert [call[0] for call in runtime.calls] == ["deploy", "restart"]  # …and restarted
    assert runtime.deployments["orders"].revision == 1
    reasons = list(LifecycleEvent.objects.values_list("reason", flat=True))
    assert any("schema discovery turned on" in reason for reason in reasons)
    assert AuditEvent.objects.filter(action="channel.discovery").exists()

    runtime.calls.clear()  # idempotent: nothing to do
    assert (
        api.put(f"{CHANNELS}orders/discovery", {"enabled": True}, format="json").status_code == 200
    )
    assert runtime.calls == []
    # a later start deploys with the flag too
    assert api.post(f"{CHANNELS}orders/stop").status_code == 202
    assert api.post(f"{CHANNELS}orders/start").status_code == 202
    assert runtime.deployments["orders"].discovery is True


@pytest.mark.parametrize("state", ["ALIVE", "DEAD"])
def test_the_re_deploy_names_the_worker_a_start_would_name(api, spec, runtime, state):
    """Turning discovery on re-deploys the connector as a start of it would
    (:func:`console.services.deployments.deployment_for`): on its worker while that worker
    is alive, on none once it is dead (the control loop places it on a live one), never
    on a worker that cannot run it."""
    Worker.objects.create(worker_id="w1", state="ALIVE")
    started(api, spec)
    assert runtime.deployments["orders"].worker_id == "w1"
    Worker.objects.filter(worker_id="w1").update(state=state)

    assert (
        api.put(f"{CHANNELS}orders/discovery", {"enabled": True}, format="json").status_code == 200
    )

    assert runtime.deployments["orders"].discovery is True
    assert runtime.deployments["orders"].worker_id == ("w1" if state == "ALIVE" else None)
    assert Connector.objects.get(channel__name="orders").worker_id == "w1"  # the loop moves it


def test_a_stopped_channel_is_not_restarted_and_bad_bodies_are_refused(api, spec, runtime):
    assert api.post(CHANNELS, {"name": "orders", "spec": spec}, format="json").status_code == 201
    refused = api.put(f"{CHANNELS}orders/discovery", {"enabled": "maybe"}, format="json")
    assert refused.status_code == 400 and "enabled" in refused.json()
    assert api.put(f"{CHANNELS}nope/discovery", {"enabled": True}, format="json").status_code == 404
    assert (
        api.put(f"{CHANNELS}orders/discovery", {"enabled": True}, format="json").status_code == 200
    )
    assert runtime.calls == []  # never deployed: nothing to restart


def test_a_viewer_sees_but_cannot_switch(api, spec, django_user_model):
    assert api.post(CHANNELS, {"name": "orders", "spec": spec}, format="json").status_code == 201
    bob: User = django_user_model.objects.create_user("bob", password="x-pass-1234")
    grant_role(bob, "viewer")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=bob).key}")
    assert client.get(f"{CHANNELS}orders/discovery").status_code == 200
    denied = client.put(f"{CHANNELS}orders/discovery", {"enabled": True}, format="json")
    assert denied.status_code == 403


def test_samples_merge_register_versions_and_keep_first_seen(api, spec, runtime):
    started(api, spec)
    assert (
        api.put(f"{CHANNELS}orders/discovery", {"enabled": True}, format="json").status_code == 200
    )
    runtime.samples["orders"] = [event({"amount": 3, "region": "eu"})]

    assert collect_samples(now=T0) == {"orders": 1}

    runtime.samples["orders"] = [event({"amount": 4, "region": "us"}, 2)]  # same shape
    assert collect_samples(now=T0 + timedelta(minutes=1)) == {}
    later = T0 + timedelta(minutes=2)
    runtime.samples["orders"] = [event({"amount": 2.5, "coupon": {"code": "X"}}, 3)]
    assert collect_samples(now=later) == {"orders": 2}

    body = api.get(f"{CHANNELS}orders/discovery").json()
    fields = {f["path"]: f for f in body["fields"]}
    assert fields["data.amount"]["types"] == ["number"]  # widened from integer
    assert fields["data.amount"]["first_seen"] == "2026-11-01T08:00:00Z"
    assert fields["data.coupon.code"]["first_seen"] == "2026-11-01T08:02:00Z"
    assert body["samples"] == 3 and body["version"] == 2
    assert body["schema"]["$schema"].endswith("2020-12/schema")
    versions = SubjectVersion.objects.filter(subject__name="orders-discovered").order_by("version")
    assert [v.version for v in versions] == [1, 2]
    assert versions[0].subject.compatibility == "NONE"
    registered = json.loads(versions[1].schema.schema)
    assert "coupon" in registered["properties"]["data"]["properties"]
    # the registry's own API serves it
    latest = api.get("/api/v1/schemas/orders-discovered/").json()
    assert "orders-discovered" in json.dumps(latest)


def test_channels_without_discovery_are_not_asked_and_the_task_never_fails(api, spec, runtime):
    started(api, spec)
    runtime.samples["orders"] = [event({"a": 1})]
    assert collect_samples() == {}
    assert runtime.samples["orders"]  # not taken
    assert (
        api.put(f"{CHANNELS}orders/discovery", {"enabled": True}, format="json").status_code == 200
    )
    ChannelDiscovery.objects.update(schema={"type": 7})  # a corrupt stored schema
    collect_discovered()  # logged, not raised
