"""The Kafka Connect REST facade (``/connect/``): Connect's shapes and codes over channels,
the same roles as /api/v1, changes audited through the services."""

from __future__ import annotations

import base64
import json

import pytest
from rest_framework.test import APIClient

from console import permissions
from console.choices import ConnectorState
from console.models import AuditEvent, Channel, Connector, LifecycleEvent, Task
from runtime_adapter.base import ConnectorOffsets, OffsetChange, SourceOffset

pytestmark = pytest.mark.django_db

C = "/connect/connectors"


def create(api, spec, name="orders"):
    response = api.post("/api/v1/channels/", {"name": name, "spec": spec}, format="json")
    assert response.status_code == 201, response.content


def started(api, spec, name="orders", tasks=2) -> Connector:
    create(api, spec, name)
    assert api.post(f"/api/v1/channels/{name}/start").status_code == 202
    connector = Connector.objects.get(runtime_id=name)
    Connector.objects.filter(pk=connector.pk).update(state=ConnectorState.RUNNING)
    for task in range(tasks):
        Task.objects.create(
            connector=connector,
            task_id=task,
            state=ConnectorState.RUNNING,
            worker_id="host-1",
            topic="orders",
            partition=task,
        )
    return connector


def test_root_answers_connects_server_info(api):
    body = api.get("/connect/").json()
    assert set(body) == {"version", "commit", "kafka_cluster_id"}


def test_list_and_expand(api, spec):
    started(api, spec, "orders")
    create(api, spec, "refunds")
    assert api.get(C).json() == ["orders", "refunds"]
    body = api.get(f"{C}?expand=status").json()
    assert body["orders"]["status"] == {
        "name": "orders",
        "connector": {"state": "RUNNING", "worker_id": ""},
        "tasks": [
            {"id": 0, "state": "RUNNING", "worker_id": "host-1"},
            {"id": 1, "state": "RUNNING", "worker_id": "host-1"},
        ],
        "type": "sink",
    }
    assert body["refunds"]["status"]["connector"]["state"] == "STOPPED"
    assert "info" not in body["orders"]
    both = api.get(f"{C}?expand=status&expand=info").json()
    assert set(both["orders"]) == {"status", "info"}
    assert both["orders"]["info"]["tasks"] == [
        {"connector": "orders", "task": 0},
        {"connector": "orders", "task": 1},
    ]
    bad = api.get(f"{C}?expand=nope")
    assert bad.status_code == 400 and bad.json()["error_code"] == 400


def test_connector_config_tasks_topics(api, spec):
    started(api, spec)
    info = api.get(f"{C}/orders").json()
    assert info["name"] == "orders" and info["type"] == "sink"
    config = api.get(f"{C}/orders/config").json()
    assert config["connector.class"] == "io.sluice.connect.Channel"
    assert config["topics"] == "orders"
    assert config["tasks.max"] == "2"
    assert config["sluice.source.type"] == "kafka"
    assert config["sluice.sink.type"] == "kafka"
    assert json.loads(config["sluice.spec"])["source"]["config"]["topics"] == ["orders"]
    assert all(isinstance(v, str) for v in config.values())
    tasks = api.get(f"{C}/orders/tasks").json()
    assert [t["id"] for t in tasks] == [
        {"connector": "orders", "task": 0},
        {"connector": "orders", "task": 1},
    ]
    assert api.get(f"{C}/orders/tasks/1/status").json() == {
        "id": 1,
        "state": "RUNNING",
        "worker_id": "host-1",
    }
    missing = api.get(f"{C}/orders/tasks/7/status")
    assert missing.status_code == 404 and missing.json()["error_code"] == 404
    assert api.get(f"{C}/orders/topics").json() == {"orders": {"topics": ["orders"]}}


def test_config_never_returns_secrets(api, spec):
    spec["source"]["config"]["security"] = {
        "protocol": "SASL_SSL",
        "sasl_mechanism": "PLAIN",
        "username": "u",
        "password": "hunter2-very-secret",
    }
    response = api.post("/api/v1/channels/", {"name": "sec", "spec": spec}, format="json")
    assert response.status_code == 201, response.content
    text = api.get(f"{C}/sec/config").content.decode()
    assert "hunter2-very-secret" not in text
    assert "hunter2-very-secret" not in api.get(f"{C}?expand=info").content.decode()


@pytest.mark.parametrize(
    "path", ["", "/status", "/config", "/tasks", "/topics", "/offsets", "/tasks/0/status"]
)
def test_unknown_connector_is_404_in_connects_shape(api, path):
    response = api.get(f"{C}/nope{path}")
    assert response.status_code == 404
    assert response.json() == {"error_code": 404, "message": "Connector nope not found"}


def test_pause_resume_stop_are_202_and_recorded(api, spec, runtime):
    started(api, spec)
    assert api.put(f"{C}/orders/pause").status_code == 202
    assert Channel.objects.get(name="orders").target_state == "PAUSED"
    assert api.put(f"{C}/orders/resume").status_code == 202
    assert Channel.objects.get(name="orders").target_state == "RUNNING"
    assert api.put(f"{C}/orders/stop").status_code == 202
    assert Channel.objects.get(name="orders").target_state == "STOPPED"
    # Connect's pause of a STOPPED connector cannot keep a driver warm: 409 here.
    refused = api.put(f"{C}/orders/pause")
    assert refused.status_code == 409 and refused.json()["error_code"] == 409
    # resume of a STOPPED connector starts it, as Connect's resume does
    assert api.put(f"{C}/orders/resume").status_code == 202
    assert Channel.objects.get(name="orders").target_state == "RUNNING"
    reasons = list(
        LifecycleEvent.objects.filter(channel__name="orders").values_list("actor", flat=True)
    )
    assert "user:alice" in reasons


def test_restart_kip_745(api, spec):
    connector = started(api, spec)
    Task.objects.filter(connector=connector, task_id=1).update(state=ConnectorState.FAILED)
    response = api.post(f"{C}/orders/restart?includeTasks=true&onlyFailed=true")
    assert response.status_code == 202
    body = response.json()
    assert body["connector"]["state"] == "RESTARTING"
    assert {t["state"] for t in body["tasks"]} == {"RESTARTING"}
    bad = api.post(f"{C}/orders/restart?includeTasks=maybe")
    assert bad.status_code == 400 and bad.json()["error_code"] == 400


def test_offsets_get_patch_delete(api, spec, runtime):
    started(api, spec)
    runtime.checkpoints["orders"] = ConnectorOffsets(
        [SourceOffset("orders", 0, 42), SourceOffset("orders", 1, 17)], batch_id=7
    )
    assert api.get(f"{C}/orders/offsets").json() == {
        "offsets": [
            {
                "partition": {"kafka_topic": "orders", "kafka_partition": 0},
                "offset": {"kafka_offset": 42},
            },
            {
                "partition": {"kafka_topic": "orders", "kafka_partition": 1},
                "offset": {"kafka_offset": 17},
            },
        ]
    }
    body = {
        "offsets": [
            {
                "partition": {"kafka_topic": "orders", "kafka_partition": 0},
                "offset": {"kafka_offset": 5},
            }
        ]
    }
    running = api.patch(f"{C}/orders/offsets", body, format="json")
    assert running.status_code == 409, running.content
    assert set(running.json()) == {"error_code", "message"}
    api.put(f"{C}/orders/stop")
    Connector.objects.filter(runtime_id="orders").update(state=ConnectorState.STOPPED)
    altered = api.patch(f"{C}/orders/offsets", body, format="json")
    assert altered.status_code == 200, altered.content
    assert altered.json() == {
        "message": "The offsets for this channel have been altered successfully"
    }
    assert runtime.offset_changes["orders"] == OffsetChange(
        "offsets", (SourceOffset("orders", 0, 5),)
    )
    bad = api.patch(f"{C}/orders/offsets", {"offsets": [{"partition": {}}]}, format="json")
    assert bad.status_code == 400 and bad.json()["error_code"] == 400
    reset = api.delete(f"{C}/orders/offsets")
    assert reset.status_code == 200
    assert reset.json()["message"].endswith("reset successfully")


def test_create_with_spec_in_config_update_and_delete(api, spec):
    config = {"connector.class": "io.sluice.connect.Channel", "sluice.spec": json.dumps(spec)}
    created = api.post(C, {"name": "made", "config": config}, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["name"] == "made"
    again = api.post(C, {"name": "made", "config": config}, format="json")
    assert again.status_code == 409
    plain = api.post(C, {"name": "x", "config": {"connector.class": "FileStream"}}, format="json")
    assert plain.status_code == 400 and "sluice.spec" in plain.json()["message"]
    spec["sink"]["config"]["topic"] = "other"
    updated = api.put(f"{C}/made/config", {"sluice.spec": json.dumps(spec)}, format="json")
    assert updated.status_code == 200
    assert Channel.objects.get(name="made").revisions.count() == 2
    put_new = api.put(f"{C}/fresh/config", {"sluice.spec": json.dumps(spec)}, format="json")
    assert put_new.status_code == 201
    spec["transforms"][0]["type"] = "no-such-plugin"
    invalid = api.put(f"{C}/made/config", {"sluice.spec": json.dumps(spec)}, format="json")
    assert invalid.status_code == 400 and invalid.json()["error_code"] == 400
    assert api.delete(f"{C}/made").status_code == 204
    assert not Channel.objects.filter(name="made").exists()
    audited = set(AuditEvent.objects.filter(via="connect").values_list("action", "object_id"))
    assert {
        ("channel.create", "made"),
        ("channel.update", "made"),
        ("channel.update", "fresh"),
        ("channel.delete", "made"),
    } <= audited


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"a": ' * 5000 + "1" + "}" * 5000, "nest deeper than 64 levels"),
        ('{"a": ' * 250 + "1" + "}" * 250, "nest deeper than 64 levels"),
        ('{"sink": {}, "sink": {}}', "duplicate key 'sink'"),
        ('{"source": NaN}', "not JSON compliant"),
    ],
)
def test_a_spec_sent_as_a_string_is_held_to_the_apis_json_limits(api, text, said):
    """Issue 29 (finding 6): 5,000 levels gave a 500, 250 were stored (the API's limit is 64)
    and a repeated "sink" was taken."""
    config = {"connector.class": "io.sluice.connect.Channel", "sluice.spec": text}
    answer = api.post(C, {"name": "deep", "config": config}, format="json")
    assert answer.status_code == 400, answer.content
    assert said in answer.json()["message"] and "sluice.spec" in answer.json()["message"]
    assert not Channel.objects.filter(name="deep").exists()


def test_roles_and_authentication(api, spec, django_user_model, anon):
    started(api, spec)
    viewer = django_user_model.objects.create_user("vic", password="pw-viewer-1")
    permissions.grant_role(viewer, permissions.VIEWER)
    basic = APIClient()
    basic.credentials(HTTP_AUTHORIZATION="Basic " + base64.b64encode(b"vic:pw-viewer-1").decode())
    assert basic.get(C).status_code == 200
    refused = basic.put(f"{C}/orders/pause")
    assert refused.status_code == 403
    assert refused.json() == {
        "error_code": 403,
        "message": "You need the operator role (console.operate_channel) to pause channels.",
    }
    assert basic.delete(f"{C}/orders").status_code == 403
    assert basic.patch(f"{C}/orders/offsets", {}, format="json").status_code == 403
    assert basic.put(f"{C}/new/config", {"sluice.spec": "{}"}, format="json").status_code == 403
    assert anon.get(C).status_code in (401, 403)
    assert set(anon.get(C).json()) == {"error_code", "message"}


def test_task_restart_restarts_the_driver_and_is_204(api, spec, runtime):
    started(api, spec)
    assert api.post(f"{C}/orders/tasks/1/restart").status_code == 204
    assert Connector.objects.get(runtime_id="orders").state == ConnectorState.RESTARTING
    missing = api.post(f"{C}/orders/tasks/9/restart")
    assert missing.status_code == 404 and missing.json()["error_code"] == 404
