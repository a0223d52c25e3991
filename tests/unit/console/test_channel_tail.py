"""``GET /api/v1/channels/{name}/tail``: the newest events where a channel's events are (its
source topic, its sink topic or Preview buffer, a bus rule's Kafka targets, its dead-letter
topic), read from a real Kafka broker without a consumer group, bounded in count, bytes and
time (:mod:`console.selectors.tail`, :mod:`runtime_adapter.tail`)."""

from __future__ import annotations

import json
import socket
import time
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from console import services
from runtime_adapter import tail as reader
from runtime_adapter.kafka import group_offsets

pytestmark = pytest.mark.django_db

CHANNELS = "/api/v1/channels/"
T0 = 1_790_000_000_000  # epoch ms


def make_topics(bootstrap: str, *topics: tuple[str, int]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, p, 1) for t, p in topics]).values():
        future.result(30)


def produce(bootstrap: str, topic: str, records: list[dict]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for record in records:
        producer.produce(topic, **record)
    assert producer.flush(30) == 0


def kafka(bootstrap: str, **config: object) -> dict:
    return {"type": "kafka", "config": {"bootstrap_servers": bootstrap, **config}}


@pytest.fixture
def topics(kafka_bootstrap):
    """A source topic (2 partitions), a sink topic (2 partitions) and a dead-letter topic."""
    names = {k: f"tail-{k}-{uuid.uuid4().hex[:8]}" for k in ("in", "out", "dl")}
    make_topics(kafka_bootstrap, (names["in"], 2), (names["out"], 2), (names["dl"], 1))
    return names


@pytest.fixture
def linear(api, kafka_bootstrap, topics):
    """Channel ``orders``: Kafka ``in`` → Kafka ``out``, dead letters to ``dl``."""
    spec = {
        "source": kafka(kafka_bootstrap, topics=[topics["in"]]),
        "transforms": [],
        "sink": kafka(kafka_bootstrap, topic=topics["out"]),
        "errors": {"tolerance": "all", "dead_letter": kafka(kafka_bootstrap, topic=topics["dl"])},
    }
    services.create_channel(name="orders", spec=spec)
    return topics


def test_the_points_are_where_the_channel_events_are(api, linear, kafka_bootstrap):
    body = api.get(f"{CHANNELS}orders/tail").json()

    assert [(p["id"], p["kind"], p["readable"]) for p in body["points"]] == [
        ("source", "kafka", True),
        ("sink", "kafka", True),
        ("dead-letters", "kafka", True),
    ]
    assert body["points"][1]["location"] == f"Kafka topic {linear['out']} on {kafka_bootstrap}"
    # Without `at`, the tail opens on what the channel wrote: its sink (empty so far).
    assert body["point"]["id"] == "sink"
    assert (body["state"], body["records"], body["complete"]) == ("ok", [], True)


def test_newest_first_across_partitions_and_limited(api, linear, kafka_bootstrap):
    # Ten records, one second apart, alternating between the two partitions.
    records = [
        {"value": json.dumps({"seq": i}).encode(), "partition": i % 2, "timestamp": T0 + i * 1000}
        for i in range(10)
    ]
    produce(kafka_bootstrap, linear["out"], records)

    body = api.get(f"{CHANNELS}orders/tail?at=sink&limit=4").json()

    assert body["state"] == "ok"
    assert [r["value"] for r in body["records"]] == [{"seq": s} for s in (9, 8, 7, 6)]
    assert [(r["partition"], r["offset"]) for r in body["records"]] == [
        (1, 4),
        (0, 4),
        (1, 3),
        (0, 3),
    ]
    newest = body["records"][0]
    assert newest["topic"] == linear["out"]
    assert newest["timestamp"] == "2026-09-21T14:13:29Z"
    assert (newest["value_encoding"], newest["truncated"]) == ("json", False)
    # Read by assignment: the reader's group never committed anything.
    assert group_offsets(kafka_bootstrap, reader.READER_GROUP) == {}


def test_keys_headers_and_values_are_shown_as_what_they_are(api, linear, kafka_bootstrap):
    long_text = json.dumps({"note": "x" * (reader.VALUE_BYTES + 100)}).encode()
    produce(
        kafka_bootstrap,
        linear["in"],
        [
            {
                "value": b'{"seq": 1}',
                "key": b"6",
                "headers": [("trace", b"abc-1"), ("raw", b"\xff\xfe")],
                "partition": 0,
                "timestamp": T0,
            },
            {"value": b"plain words", "partition": 0, "timestamp": T0 + 1},
            {"value": b"\xff\x00\x01", "partition": 0, "timestamp": T0 + 2},
            {"value": long_text, "partition": 0, "timestamp": T0 + 3},
            {"value": None, "key": b"gone", "partition": 0, "timestamp": T0 + 4},
        ],
    )

    records = api.get(f"{CHANNELS}orders/tail?at=source").json()["records"]

    tombstone, cut, binary, text, keyed = records
    assert (keyed["key"], keyed["key_encoding"]) == ("6", "text")
    assert keyed["headers"] == [
        {"name": "trace", "value": "abc-1", "encoding": "text"},
        {"name": "raw", "value": "//4=", "encoding": "base64"},
    ]
    assert (keyed["value"], keyed["value_encoding"]) == ({"seq": 1}, "json")
    assert (text["value"], text["value_encoding"], text["key_encoding"]) == (
        "plain words",
        "text",
        "null",
    )
    assert (binary["value"], binary["value_encoding"]) == ("/wAB", "base64")
    # A value past the ceiling is cut there, marked, and shown as the text it starts with.
    assert (cut["truncated"], cut["value_encoding"], cut["size"]) == (True, "text", len(long_text))
    assert len(cut["value"]) == reader.VALUE_BYTES
    assert cut["value"].startswith('{"note": "xxx')
    assert (tombstone["value"], tombstone["value_encoding"], tombstone["key"]) == (
        None,
        "null",
        "gone",
    )


def test_the_dead_letter_topic_is_a_point(api, linear, kafka_bootstrap):
    produce(kafka_bootstrap, linear["dl"], [{"value": b'{"type": "sluice.deadletter"}'}])

    body = api.get(f"{CHANNELS}orders/tail?at=dead-letters").json()

    assert [r["value"] for r in body["records"]] == [{"type": "sluice.deadletter"}]


def test_an_unknown_point_is_refused_naming_the_valid_ones(api, linear):
    response = api.get(f"{CHANNELS}orders/tail?at=rule:eu")

    assert response.status_code == 400
    assert response.json() == {
        "at": ["this channel has no point 'rule:eu'; its points are: source, sink, dead-letters"]
    }
    assert api.get(f"{CHANNELS}orders/tail?limit=201").json() == {
        "limit": ["Must be a whole number from 1 to 200."]
    }
    assert api.get(f"{CHANNELS}missing/tail").status_code == 404


def test_a_missing_topic_is_said(api, kafka_bootstrap):
    spec = {
        "source": kafka(kafka_bootstrap, topics=["tail-never-made"]),
        "transforms": [],
        "sink": {"type": "preview", "config": {"max_events": 10}},
    }
    services.create_channel(name="orders", spec=spec)

    body = api.get(f"{CHANNELS}orders/tail?at=source").json()

    assert (body["state"], body["records"]) == ("ok", [])
    assert body["note"] == "topic tail-never-made does not exist yet"


def test_a_bus_offers_each_rule_kafka_target(api, kafka_bootstrap, topics):
    http = {"type": "http", "config": {"url": "https://api.example.com/events"}}
    spec = {
        "source": kafka(kafka_bootstrap, topics=[topics["in"]]),
        "rules": [
            {"name": "eu", "sinks": [kafka(kafka_bootstrap, topic=topics["out"]), http]},
            {
                "name": "us",
                "sinks": [
                    kafka(kafka_bootstrap, topic=topics["out"]),
                    kafka(kafka_bootstrap, topic=topics["dl"]),
                ],
            },
        ],
    }
    services.create_channel(name="bus", spec=spec)
    produce(kafka_bootstrap, topics["dl"], [{"value": b'{"to": "us"}'}])

    body = api.get(f"{CHANNELS}bus/tail").json()
    assert [(p["id"], p["label"]) for p in body["points"]] == [
        ("source", "Source"),
        ("rule:eu", f"Rule eu → {topics['out']}"),
        ("rule:us:0", f"Rule us → {topics['out']}"),
        ("rule:us:1", f"Rule us → {topics['dl']}"),
    ]
    assert body["point"]["id"] == "rule:eu"
    answer = api.get(f"{CHANNELS}bus/tail?at=rule:us:1").json()
    assert [r["value"] for r in answer["records"]] == [{"to": "us"}]


def test_a_preview_sink_reads_the_runtime_buffer(api, runtime):
    spec = {
        "source": {"type": "generator", "config": {"rate": 5}},
        "transforms": [],
        "sink": {"type": "preview", "config": {"max_events": 50}},
    }
    services.create_channel(name="demo", spec=spec)
    body = api.get(f"{CHANNELS}demo/tail").json()
    # A generator keeps no place to read: the only point is the Preview sink.
    assert [(p["id"], p["kind"]) for p in body["points"]] == [("sink", "preview")]
    assert (body["state"], body["note"], body["records"]) == ("ok", "the channel never ran", [])

    api.post(f"{CHANNELS}demo/start")
    runtime.previews["demo"] = [{"id": "2", "time": "2026-11-30T08:00:01Z"}, {"id": "1"}]
    records = api.get(f"{CHANNELS}demo/tail?limit=5").json()["records"]

    assert [(r["value"], r["timestamp"], r["partition"]) for r in records] == [
        ({"id": "2", "time": "2026-11-30T08:00:01Z"}, "2026-11-30T08:00:01Z", None),
        ({"id": "1"}, None, None),
    ]
    assert runtime.calls_named("preview")[-1] == ("demo", 5)


def test_a_channel_with_nothing_to_read(api, tmp_path):
    spec = {
        "source": {"type": "generator", "config": {"rate": 5}},
        "transforms": [],
        "sink": {"type": "http", "config": {"url": "https://api.example.com/events"}},
    }
    services.create_channel(name="quiet", spec=spec)

    body = api.get(f"{CHANNELS}quiet/tail").json()

    assert (body["points"], body["point"], body["state"]) == ([], None, "none")
    assert body["note"] == "This channel has no Kafka topic or Preview sink the console can read."
    assert api.get(f"{CHANNELS}quiet/tail?at=source").json() == {
        "at": [
            "this channel has no point 'source': it has no Kafka topic or Preview sink the "
            "console can read"
        ]
    }


def test_a_broker_that_does_not_answer_is_unreachable_soon(api):
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    spec = {
        "source": kafka(f"127.0.0.1:{port}", topics=["orders"]),
        "transforms": [],
        "sink": kafka(f"127.0.0.1:{port}", topic="out"),
    }
    services.create_channel(name="down", spec=spec)

    started = time.monotonic()
    body = api.get(f"{CHANNELS}down/tail?at=sink").json()

    # within the reader's timeout, not librdkafka's own (a minute): a bound between the two
    # that a busy machine cannot stretch the first past
    assert time.monotonic() - started < reader.TIMEOUT + 20
    assert (body["state"], body["records"], body["complete"]) == ("unreachable", [], False)
    assert body["note"].startswith(f"Kafka did not answer: Kafka broker(s) 127.0.0.1:{port}")


def test_the_tail_needs_a_user(anon, linear):
    assert anon.get(f"{CHANNELS}orders/tail").status_code == 401


def test_a_cut_never_splits_a_character():
    found = reader.decode("é".encode() * 3, 5)  # 6 bytes, cut inside the third é
    assert (found.value, found.encoding, found.truncated, found.size) == ("éé", "text", True, 6)
