"""The Kafka Connect REST facade driven by a real Connect client nobody here wrote:
kafka-connect-py (PyPI, pinned in pyproject's test extra), against the live stack with a
real channel Kafka → Kafka on Spark. Offsets: the client has no offsets calls, so KIP-875's
endpoints are called with plain requests and basic auth, as curl users do."""

from __future__ import annotations

import json

import pytest
import requests
from kafka_connect import KafkaConnect

from tests.integration.conftest import Stack
from tests.integration.test_walking_skeleton import consume_all, make_topic, produce
from tests.support.processes import wait_until
from tests.support.specs import kafka_passthrough

pytestmark = pytest.mark.integration

NAME, SOURCE, SINK = "connect-facade", "connect-in", "connect-out"
EVENTS = 30
AUTH = ("admin", "integration-secret")


def spec(bootstrap: str) -> dict:
    return kafka_passthrough(bootstrap, SOURCE, SINK)


def state_of(client: KafkaConnect) -> str:
    return client.get_connector_status(NAME)["connector"]["state"]


def test_a_connect_client_lists_operates_and_moves_offsets(stack: Stack) -> None:
    make_topic(stack.kafka, SOURCE, 2)
    make_topic(stack.kafka, SINK, 1)
    produce(stack.kafka, SOURCE, [json.dumps({"n": i}).encode() for i in range(EVENTS)])
    client = KafkaConnect(url=f"{stack.base_url}/connect", auth=":".join(AUTH))

    info = client.get_cluster_info()
    assert set(info) == {"version", "commit", "kafka_cluster_id"}
    created = client.create_connector(
        {"name": NAME, "config": {"sluice.spec": json.dumps(spec(stack.kafka))}}
    )
    assert created["name"] == NAME and created["config"]["topics"] == SOURCE
    assert NAME in client.list_connectors()
    assert state_of(client) == "STOPPED"

    client.resume_connector(NAME)  # resume of a STOPPED connector starts it
    wait_until(lambda: state_of(client) == "RUNNING", 180, what="RUNNING")
    assert len(consume_all(stack.kafka, SINK, EVENTS, timeout=180)) == EVENTS
    listed = client.list_connectors(expand="status")
    assert listed[NAME]["status"]["connector"]["state"] == "RUNNING"
    wait_until(lambda: len(client.get_connector_status(NAME)["tasks"]) == 2, 60, what="2 tasks")
    assert {t["state"] for t in client.get_connector_status(NAME)["tasks"]} == {"RUNNING"}
    assert [t["id"]["task"] for t in client.list_connector_tasks(NAME)] == [0, 1]
    assert client.get_connector_task_status(NAME, 1)["state"] == "RUNNING"
    assert client.list_connector_topics(NAME) == {NAME: {"topics": [SOURCE]}}
    config = client.get_connector_config(NAME)
    assert config["connector.class"] == "io.sluice.connect.Channel"

    client.pause_connector(NAME)
    wait_until(lambda: state_of(client) == "PAUSED", 60, what="PAUSED")
    client.resume_connector(NAME)
    wait_until(lambda: state_of(client) == "RUNNING", 60, what="RUNNING again")

    restarted = client.restart_connector(NAME, include_tasks=True, only_failed=False)
    assert restarted["connector"]["state"] == "RESTARTING"
    wait_until(lambda: state_of(client) == "RUNNING", 180, what="RUNNING after restart")

    # The client raises Connect's error for a refused offsets change while it runs…
    url = f"{stack.base_url}/connect/connectors/{NAME}/offsets"
    body = {
        "offsets": [
            {
                "partition": {"kafka_topic": SOURCE, "kafka_partition": 0},
                "offset": {"kafka_offset": 0},
            }
        ]
    }
    refused = requests.patch(url, json=body, auth=AUTH, timeout=10)
    assert refused.status_code == 409 and refused.json()["error_code"] == 409

    client.stop_connector(NAME)
    wait_until(lambda: state_of(client) == "STOPPED", 60, what="STOPPED")
    offsets = requests.get(url, auth=AUTH, timeout=10).json()["offsets"]
    assert sum(o["offset"]["kafka_offset"] for o in offsets) == EVENTS
    altered = requests.patch(url, json=body, auth=AUTH, timeout=10)
    assert altered.status_code == 200, altered.text
    moved = requests.get(url, auth=AUTH, timeout=10).json()["offsets"]
    assert {
        "partition": {"kafka_topic": SOURCE, "kafka_partition": 0},
        "offset": {"kafka_offset": 0},
    } in moved
    assert requests.delete(url, auth=AUTH, timeout=10).status_code == 200

    with pytest.raises(requests.HTTPError) as missing:
        client.get_connector_status("no-such-connector")
    assert missing.value.response.json() == {
        "error_code": 404,
        "message": "Connector no-such-connector not found",
    }
    client.delete_connector(NAME)
    assert NAME not in client.list_connectors()
