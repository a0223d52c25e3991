"""The builder knowing the shape of a channel's events, in real headless Chromium
(frontend/e2e/shape.e2e.mjs) against the stack: a registry JSON Schema subject picked as the
source's shape, a filter naming a field it does not have warned on its node, field paths
suggested in the pattern editor; an Avro subject's fields suggested and checked
(shape-avro.e2e.mjs); the demo channel's discovery panel and a sample event generated from
its discovered schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.demo import DEMO_CHANNEL
from tests.e2e.conftest import NodeScript
from tests.support.processes import wait_until
from tests.support.specs import kafka_passthrough
from tests.support.stack import Stack, manage

pytestmark = pytest.mark.integration

CHANNEL = "shape-warning"
SUBJECT = "shape-orders-value"
PAYLOAD = {
    "type": "object",
    "properties": {"amount": {"type": "number"}, "region": {"type": "string"}},
}


def test_unknown_field_warning_and_autocompletion(
    stack: Stack, node_script: NodeScript, artifacts_dir: Path
) -> None:
    shots = artifacts_dir / "e2e"
    shots.mkdir(parents=True, exist_ok=True)
    http = stack.session()
    spec = kafka_passthrough(stack.kafka, "shape-in", "shape-out")
    spec["transforms"] = [
        {"type": "filter", "config": {"pattern": {"data": {"amout": [{"numeric": [">", 1]}]}}}}
    ]
    created = http.post(f"{stack.api}/channels/", json={"name": CHANNEL, "spec": spec}, timeout=10)
    assert created.status_code == 201, created.text
    registered = http.post(
        f"{stack.base_url}/schema-registry/subjects/{SUBJECT}/versions",
        json={"schemaType": "JSON", "schema": json.dumps(PAYLOAD)},
        timeout=10,
    )
    assert registered.status_code == 200, registered.text
    try:
        out = node_script("shape.e2e.mjs", shots, CHANNEL=CHANNEL, SUBJECT=SUBJECT)
        assert "data.amout" in out and "warning cleared" in out
        for shot in ("shape-unknown-field-warning.png", "shape-autocomplete.png"):
            assert (shots / shot).stat().st_size > 10_000
    finally:
        http.delete(f"{stack.api}/channels/{CHANNEL}/", timeout=10)
        http.delete(f"{stack.base_url}/schema-registry/subjects/{SUBJECT}", timeout=10)


AVRO_CHANNEL = "shape-avro"
AVRO_SUBJECT = "shape-avro-orders-value"
AVRO_ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "region", "type": {"type": "enum", "name": "Region", "symbols": ["EU", "US"]}},
        {
            "name": "customer",
            "type": {
                "type": "record",
                "name": "Customer",
                "fields": [
                    {"name": "name", "type": "string"},
                    {"name": "tier", "type": ["null", "string"], "default": None},
                ],
            },
        },
        {
            "name": "items",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "Item",
                    "fields": [{"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}],
                },
            },
        },
        {"name": "tags", "type": {"type": "map", "values": "string"}},
    ],
}


def test_an_avro_subjects_fields_suggested_and_checked(
    stack: Stack, node_script: NodeScript, artifacts_dir: Path
) -> None:
    shots = artifacts_dir / "e2e"
    shots.mkdir(parents=True, exist_ok=True)
    http = stack.session()
    spec = kafka_passthrough(stack.kafka, "shape-avro-in", "shape-avro-out")
    spec["transforms"] = [
        {"type": "filter", "config": {"pattern": {"data": {"custmer": {"tier": ["gold"]}}}}},
        {
            "type": "sql",
            "config": {
                "expressions": [
                    "data:amount::double AS amount",
                    "data:items[0].sku AS sku",
                    "data:tags.vip AS tag",
                    "data:regoin AS region",
                ]
            },
        },
    ]
    spec["sink"]["config"]["key_field"] = "data.customer.nmae"
    created = http.post(
        f"{stack.api}/channels/", json={"name": AVRO_CHANNEL, "spec": spec}, timeout=10
    )
    assert created.status_code == 201, created.text
    registered = http.post(
        f"{stack.base_url}/schema-registry/subjects/{AVRO_SUBJECT}/versions",
        json={"schema": json.dumps(AVRO_ORDER)},
        timeout=10,
    )
    assert registered.status_code == 200, registered.text
    try:
        out = node_script("shape-avro.e2e.mjs", shots, CHANNEL=AVRO_CHANNEL, SUBJECT=AVRO_SUBJECT)
        assert "data.customer.name" in out and "warning cleared" in out
        for shot in ("shape-avro-unknown-fields.png", "shape-avro-suggestions.png"):
            assert (shots / shot).stat().st_size > 10_000
    finally:
        http.delete(f"{stack.api}/channels/{AVRO_CHANNEL}/", timeout=10)
        http.delete(f"{stack.base_url}/schema-registry/subjects/{AVRO_SUBJECT}", timeout=10)


def test_discovery_panel_and_a_sample_from_the_discovered_schema(
    stack: Stack, node_script: NodeScript, artifacts_dir: Path
) -> None:
    shots = artifacts_dir / "e2e"
    shots.mkdir(parents=True, exist_ok=True)
    manage(stack.env, "seed_demo", "--always")
    http = stack.session()
    url = f"{stack.api}/channels/{DEMO_CHANNEL}/discovery"
    assert http.put(url, json={"enabled": True}, timeout=10).status_code == 200
    assert http.post(f"{stack.api}/channels/{DEMO_CHANNEL}/start", timeout=10).status_code == 202
    try:

        def discovered():
            fields = {f["path"] for f in http.get(url, timeout=5).json()["fields"]}
            return fields if "data.amount" in fields else None

        wait_until(discovered, 240, interval=1, what="the demo's discovered schema")
        out = node_script("discovery.e2e.mjs", shots, CHANNEL=DEMO_CHANNEL)
        assert "data.amount" in out
        for shot in ("discovery-panel.png", "discovery-sample-event.png"):
            assert (shots / shot).stat().st_size > 10_000
    finally:
        http.put(url, json={"enabled": False}, timeout=10)
        http.post(f"{stack.api}/channels/{DEMO_CHANNEL}/stop", timeout=10)
