"""HTTP ingestion on real Kafka: the producer path alone, then the whole stack end to end.

Producers authenticate with the channel's ingestion token (``Authorization: Bearer``), as
real producers do: no console login.
"""

from __future__ import annotations

import json
import uuid

import pytest
import requests
from confluent_kafka.admin import AdminClient
from rest_framework.test import APIClient

from console import services
from console.services.ingest.kafka import set_ingest_kafka
from console.services.ingest.tokens import issue_ingest_token
from tests.integration.conftest import Stack
from tests.integration.test_walking_skeleton import (
    consume_all,
    make_topic,
    produce,
    wait_for_state,
)

pytestmark = pytest.mark.integration

STRUCTURED = "application/cloudevents+json"
BATCH = "application/cloudevents-batch+json"


def http_spec(bootstrap: str, sink_topic: str) -> dict:
    return {
        "source": {"type": "http", "config": {"default_type": "com.example.plain"}},
        "transforms": [],
        "sink": {
            "type": "kafka",
            "config": {
                "bootstrap_servers": bootstrap,
                "topic": sink_topic,
                "format": "cloudevents",
            },
        },
    }


def cloudevent(event_id: str, **more) -> dict:
    return {
        "specversion": "1.0",
        "id": event_id,
        "source": "/it/shop",
        "type": "com.example.order",
        "data": {"order": event_id},
        **more,
    }


def binary_headers(event_id: str) -> dict[str, str]:
    return {
        "ce-specversion": "1.0",
        "ce-id": event_id,
        "ce-source": "/it/binary",
        "ce-type": "com.example.binary",
        "ce-time": "2024-06-01T10:00:00+02:00",
        "ce-tenant": "acme",
    }


@pytest.fixture
def real_ingest(kafka_bootstrap, redis_url, settings):
    settings.SLUICE_KAFKA_BOOTSTRAP = kafka_bootstrap
    settings.REDIS_URL = redis_url  # the rate limit's buckets
    set_ingest_kafka(None)
    yield kafka_bootstrap
    set_ingest_kafka(None)


@pytest.mark.django_db
def test_accepted_events_are_in_the_ingest_topic(real_ingest, django_user_model):
    user = django_user_model.objects.create_user("ingest-it", password="x-secret-pass")
    name = f"ingest-{uuid.uuid4().hex[:8]}"
    channel = services.create_channel(name=name, spec=http_spec(real_ingest, "unused"), user=user)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_ingest_token(channel).token}")
    topic = f"sluice.ingest.{name}"
    metadata = AdminClient({"bootstrap.servers": real_ingest}).list_topics(topic, timeout=10)
    assert len(metadata.topics[topic].partitions) == 3
    url = f"/api/v1/channels/{name}/events"

    structured = api.post(
        url, json.dumps(cloudevent("s-1", tenant="acme")), content_type=STRUCTURED
    )
    batch = api.post(
        url,
        json.dumps([cloudevent("b-1"), cloudevent("b-bad", time="noon"), cloudevent("b-2")]),
        content_type=BATCH,
    )
    binary = api.post(
        url, b'{"n": 1}', content_type="application/json", headers=binary_headers("bin-1")
    )
    plain = api.post(url, json.dumps({"n": 2}), content_type="application/json")

    assert structured.status_code == 202, structured.content
    assert batch.status_code == 207, batch.content
    assert binary.status_code == 202, binary.content
    assert plain.status_code == 202, plain.content
    plain_id = plain.json()["results"][0]["id"]
    records = consume_all(real_ingest, topic, expected=5, timeout=30)
    events = {value["id"]: value for value in map(json.loads, records)}
    assert set(events) == {"s-1", "b-1", "b-2", "bin-1", plain_id}
    assert events["s-1"] == cloudevent("s-1", tenant="acme")
    assert events["bin-1"] == {
        "specversion": "1.0",
        "id": "bin-1",
        "source": "/it/binary",
        "type": "com.example.binary",
        "time": "2024-06-01T08:00:00Z",
        "tenant": "acme",
        "datacontenttype": "application/json",
        "data": {"n": 1},
    }
    assert events[plain_id]["type"] == "com.example.plain"
    assert events[plain_id]["data"] == {"n": 2}


def test_events_posted_over_http_reach_the_sink(stack: Stack):
    name, sink = "http-orders", "http-orders-out"
    make_topic(stack.kafka, sink, 1)
    http = stack.session()
    api = f"{stack.api}/channels/{name}"
    created = http.post(
        f"{stack.api}/channels/",
        json={"name": name, "spec": http_spec(stack.kafka, sink)},
        timeout=10,
    )
    assert created.status_code == 201, created.text
    issued = http.post(f"{api}/ingest-token", timeout=10)
    assert issued.status_code == 201, issued.text
    producer = requests.Session()  # no console login: the channel's token only
    producer.headers["Authorization"] = f"Bearer {issued.json()['token']}"
    anonymous = requests.post(f"{api}/events", json={"x": 1}, timeout=10)
    assert anonymous.status_code == 401 and anonymous.headers["WWW-Authenticate"].startswith(
        "Bearer"
    )
    # Accepted before the channel ever ran: read from the start of the ingest topic.
    early = producer.post(f"{api}/events", json={"early": True}, timeout=30)
    assert early.status_code == 202, early.text

    assert http.post(f"{api}/start", timeout=30).status_code == 202
    wait_for_state(stack, name, "RUNNING", 180)

    def send(body: bytes, content_type: str, **headers: str):
        response = producer.post(
            f"{api}/events",
            data=body,
            headers={"Content-Type": content_type, **headers},
            timeout=30,
        )
        assert response.status_code == 202, response.text
        return [result["id"] for result in response.json()["results"]]

    ids = [early.json()["results"][0]["id"]]
    ids += send(json.dumps(cloudevent("s-1")).encode(), STRUCTURED)
    ids += send(json.dumps([cloudevent("b-1"), cloudevent("b-2")]).encode(), BATCH)
    ids += send(b'{"n": 1}', "application/json", **binary_headers("bin-1"))
    ids += send(json.dumps({"plain": 1}).encode(), "application/json")
    assert ids[1:5] == ["s-1", "b-1", "b-2", "bin-1"]

    values = consume_all(stack.kafka, sink, expected=len(ids), timeout=120)
    events = {event["id"]: event for event in map(json.loads, values)}
    assert sorted(events) == sorted(ids), f"{sorted(events)}\n{stack.logs()}"
    assert len(values) == len(ids), "no duplicates"
    assert events["s-1"] == cloudevent("s-1")
    assert events["bin-1"]["tenant"] == "acme"
    assert events["bin-1"]["time"] == "2024-06-01T08:00:00Z"
    assert events["bin-1"]["data"] == {"n": 1}
    assert events[ids[0]]["data"] == {"early": True}
    assert events[ids[-1]]["type"] == "com.example.plain"
    assert events[ids[-1]]["source"] == f"/sluice/channels/{name}/events"

    status = http.get(f"{api}/status", timeout=5).json()
    assert {task["topic"] for task in status["tasks"]} == {f"sluice.ingest.{name}"}
    assert http.post(f"{api}/stop", timeout=10).status_code == 202


@pytest.mark.django_db
def test_a_deleted_channels_events_never_reach_a_new_channel_of_its_name(
    real_ingest, django_user_model
):
    """Issue 29 (finding 10): the ingest topic outlived its channel, and a new channel of the
    same name found the old events there."""
    user = django_user_model.objects.create_user("ingest-del", password="x-secret-pass")
    name = f"ingest-del-{uuid.uuid4().hex[:8]}"
    topic = f"sluice.ingest.{name}"
    admin = AdminClient({"bootstrap.servers": real_ingest})
    channel = services.create_channel(name=name, spec=http_spec(real_ingest, "unused"), user=user)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_ingest_token(channel).token}")
    posted = api.post(
        f"/api/v1/channels/{name}/events", json.dumps(cloudevent("old-1")), content_type=STRUCTURED
    )
    assert posted.status_code == 202, posted.content
    assert consume_all(real_ingest, topic, expected=1, timeout=30)

    services.delete_channel(channel, user=user)
    assert topic not in admin.list_topics(timeout=10).topics, "deleted with its channel"

    # A topic left under the name (its deletion failed then: Kafka was away) is deleted when
    # a new channel takes the name.
    make_topic(real_ingest, topic, 3)
    produce(real_ingest, topic, [json.dumps(cloudevent("stale-1")).encode()])
    services.create_channel(name=name, spec=http_spec(real_ingest, "unused"), user=user)
    assert topic in admin.list_topics(timeout=10).topics
    assert consume_all(real_ingest, topic, expected=1, timeout=5) == [], "the stale event is gone"
