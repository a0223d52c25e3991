"""Schema discovery on the real stack: the demo channel's live events sampled by its driver,
merged by the control loop, registered in the schema registry."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer

from console.demo import DEMO_CHANNEL
from tests.integration.conftest import Stack, manage
from tests.integration.test_walking_skeleton import wait_for_state
from tests.support.orders import produce_range
from tests.support.processes import wait_until
from tests.support.specs import kafka_passthrough

pytestmark = pytest.mark.integration


def test_discovery_on_the_demo_channel(stack: Stack):
    manage(stack.env, "seed_demo", "--always")  # other tests' channels share the stack
    http = stack.session()
    url = f"{stack.api}/channels/{DEMO_CHANNEL}/discovery"
    switched = http.put(url, json={"enabled": True}, timeout=10)
    assert switched.status_code == 200, switched.text
    assert switched.json()["enabled"] is True
    assert http.post(f"{stack.api}/channels/{DEMO_CHANNEL}/start", timeout=10).status_code == 202
    try:
        wait_for_state(stack, DEMO_CHANNEL, "RUNNING", 180)

        def discovered():
            body = http.get(url, timeout=5).json()
            paths = {field["path"] for field in body["fields"]}
            wanted = {"id", "type", "source", "data.order_id", "data.amount", "data.region"}
            return body if wanted <= paths and body["version"] >= 1 else None

        body = wait_until(discovered, 120, interval=1, what="the demo's discovered schema")
        fields = {field["path"]: field for field in body["fields"]}
        assert set(fields["data.amount"]["types"]) <= {"integer", "number"}
        assert fields["data.region"]["types"] == ["string"]
        assert all(field["first_seen"] for field in body["fields"])
        assert body["samples"] >= 1 and body["subject"] == f"{DEMO_CHANNEL}-discovered"

        # registered in the registry, read back through its Confluent-compatible API
        subject = body["subject"]
        registry = f"{stack.base_url}/schema-registry/subjects/{subject}/versions/latest"
        latest = http.get(registry, timeout=5)
        assert latest.status_code == 200, latest.text
        assert latest.json()["schemaType"] == "JSON"
        schema = json.loads(latest.json()["schema"])
        assert "order_id" in schema["properties"]["data"]["properties"]

        # the samples are events: they never travel with the channel's status
        status = http.get(f"{stack.api}/channels/{DEMO_CHANNEL}/status", timeout=5).text
        assert "sluice_discovery" not in status
    finally:
        http.put(url, json={"enabled": False}, timeout=10)
        http.post(f"{stack.api}/channels/{DEMO_CHANNEL}/stop", timeout=10)
    wait_for_state(stack, DEMO_CHANNEL, "STOPPED", 60)


def test_discovery_of_a_kafka_channel_samples_beside_its_query(stack: Stack):
    """A Kafka source is sampled by small batch reads of the last records the query reached
    (the query itself unchanged); the shape grows when new fields arrive."""
    name, source = "discover-kafka", "discover-kafka-in"
    http = stack.session()
    spec = kafka_passthrough(stack.kafka, source, "discover-kafka-out")
    created = http.post(f"{stack.api}/channels/", json={"name": name, "spec": spec}, timeout=10)
    assert created.status_code == 201, created.text
    url = f"{stack.api}/channels/{name}/discovery"
    assert http.put(url, json={"enabled": True}, timeout=10).status_code == 200
    produce_range(stack.kafka, source, 0, 30)
    assert http.post(f"{stack.api}/channels/{name}/start", timeout=10).status_code == 202
    try:
        wait_for_state(stack, name, "RUNNING", 180)

        def fields(*wanted: str):
            def check():
                body = http.get(url, timeout=5).json()
                paths = {field["path"]: field for field in body["fields"]}
                return body if set(wanted) <= set(paths) else None

            return check

        first = wait_until(
            fields("data.seq", "data.kind", "data.amount"),
            120,
            interval=1,
            what="the Kafka channel's discovered schema",
        )
        assert first["version"] >= 1
        producer = Producer({"bootstrap.servers": stack.kafka})
        for seq in range(30, 40):
            producer.produce(source, json.dumps({"seq": seq, "coupon": {"code": "X"}}).encode())
        assert producer.flush(30) == 0
        later = wait_until(
            fields("data.coupon.code"), 120, interval=1, what="a field added mid-stream"
        )
        assert later["version"] > first["version"]
        seen = {field["path"]: field["first_seen"] for field in later["fields"]}
        assert seen["data.coupon.code"] > seen["data.seq"]
    finally:
        http.delete(f"{stack.api}/channels/{name}/", timeout=10)
