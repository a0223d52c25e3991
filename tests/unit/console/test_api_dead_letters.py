"""``/api/v1/channels/{name}/dead-letters/``: list, filter, page and inspect a channel's dead
letters in a real Kafka topic, and redrive them into the channel's redrive topic."""

from __future__ import annotations

import json
import sys
import types
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from console import locks, metrics, services
from console.models import AuditEvent
from console.runtime import set_runtime

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 26, 10, 0, tzinfo=UTC)


def dead_letter(seq: int) -> dict:
    """Dead letter ``seq`` as the Kafka dead-letter sink writes it (format cloudevents):
    even ones a cast failure, odd ones unparseable records; one minute apart."""
    cast = seq % 2 == 0
    payload = json.dumps({"seq": seq, "amount": "n/a"}) if cast else f'{{"seq": {seq}, '
    return {
        "id": f"orders/0/{seq}",
        "source": "sluice://channels/shop",
        "specversion": "1.0",
        "type": "sluice.deadletter",
        "subject": "transforms[0] (cast)" if cast else "source",
        "time": (T0 + timedelta(minutes=seq)).isoformat().replace("+00:00", "Z"),
        "datacontenttype": "application/json",
        "data": {
            "stage": "transforms[0] (cast)" if cast else "source",
            "error_class": "CastError" if cast else "InvalidJson",
            "message": f"seq {seq}: cannot cast 'n/a' to long" if cast else f"seq {seq}: bad JSON",
            "origin": {
                "topic": "orders",
                "partition": 0,
                "offset": seq,
                "timestamp": (T0 + timedelta(minutes=seq, seconds=-5)).isoformat(),
            },
            "payload": payload,
            "event": {"id": f"orders/0/{seq}", "data": json.loads(payload)} if cast else None,
        },
    }


@pytest.fixture
def shop(kafka_bootstrap, spec, settings, redis_url, runtime):
    """Channel ``shop`` whose Kafka dead-letter topic holds 10 dead letters (seq 0..9)."""
    settings.REDIS_URL = redis_url
    settings.SLUICE_REDIS_PREFIX = f"test-{uuid.uuid4().hex[:8]}"
    set_runtime(runtime)  # changing REDIS_URL drops the cached runtime
    dlq = f"dl-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(dlq, 1, 1)])[dlq].result(30)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for seq in range(10):
        producer.produce(dlq, json.dumps(dead_letter(seq)).encode())
    producer.produce(dlq, b"not a dead letter")  # skipped, never an error
    assert producer.flush(30) == 0
    spec["source"]["config"]["bootstrap_servers"] = kafka_bootstrap
    spec["errors"] = {
        "tolerance": "all",
        "dead_letter": {
            "type": "kafka",
            "config": {"bootstrap_servers": kafka_bootstrap, "topic": dlq, "format": "cloudevents"},
        },
    }
    services.create_channel(name="shop", spec=spec)
    yield dlq
    locks.redis_client().delete(metrics.redriven_key())


@pytest.fixture
def runs(monkeypatch):
    """``console.services.runs.start_redrive`` (wip-replay's) as a recorder of its calls."""
    calls: list[dict] = []
    module = types.ModuleType("console.services.runs")

    def start_redrive(channel, *, topic, start_offsets, end_offsets, count, actor, dead_letter_ids):
        calls.append(
            {
                "dead_letter_ids": dead_letter_ids,
                "channel": channel.name,
                "topic": topic,
                "start_offsets": start_offsets,
                "end_offsets": end_offsets,
                "count": count,
                "actor": actor.get_username(),
            }
        )
        return types.SimpleNamespace(id=41, kind="redrive", state="PENDING")

    module.start_redrive = start_redrive  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "console.services.runs", module)
    return calls


def page(api, query: str = "") -> dict:
    response = api.get(f"/api/v1/channels/shop/dead-letters/{query}")
    assert response.status_code == 200, response.content
    return response.json()


def test_the_list_is_newest_first_with_error_stage_and_origin(api, shop, kafka_bootstrap):
    body = page(api)

    assert body["count"] == 10
    assert [d["origin"]["offset"] for d in body["results"]] == list(range(9, -1, -1))
    newest = body["results"][0]
    assert newest["id"] == f"kafka:{shop}:0:9"
    assert newest["stage"] == "source" and newest["error_class"] == "InvalidJson"
    assert newest["origin"]["topic"] == "orders" and newest["redrivable"] is True
    assert newest["time"] == "2026-11-26T10:09:00Z"
    assert body["target"] == {
        "type": "kafka",
        "location": f"Kafka topic {shop} on {kafka_bootstrap}",
        "readable": True,
        "note": "",
    }
    assert body["scan"] == {"scanned": 10, "limit": 5000, "limit_reached": False}
    assert body["facets"]["error_class"] == ["CastError", "InvalidJson"]


def test_filters_narrow_the_list(api, shop):
    assert page(api, "?error_class=CastError")["count"] == 5
    assert page(api, "?stage=source")["count"] == 5
    assert page(api, "?q=SEQ 3:")["count"] == 1
    window = page(api, "?since=2026-11-26T10:02:00Z&until=2026-11-26T10:05:00Z")
    assert [d["origin"]["offset"] for d in window["results"]] == [4, 3, 2]
    both = page(api, "?error_class=CastError&since=2026-11-26T10:05:00Z")
    assert [d["origin"]["offset"] for d in both["results"]] == [8, 6]
    assert page(api, "?rule=big")["count"] == 0
    assert api.get("/api/v1/channels/shop/dead-letters/?since=yesterday").status_code == 400


def test_pages_follow_each_other(api, shop):
    first = page(api, "?limit=4")
    second = page(api, "?limit=4&offset=4")

    assert [d["origin"]["offset"] for d in first["results"]] == [9, 8, 7, 6]
    assert [d["origin"]["offset"] for d in second["results"]] == [5, 4, 3, 2]
    assert "offset=4" in first["next"]


def test_one_dead_letter_in_full(api, shop):
    response = api.get(f"/api/v1/channels/shop/dead-letters/kafka:{shop}:0:4/")

    assert response.status_code == 200
    body = response.json()
    assert body["payload"] == '{"seq": 4, "amount": "n/a"}'
    assert body["event"] == {"id": "orders/0/4", "data": {"seq": 4, "amount": "n/a"}}
    assert body["message"] == "seq 4: cannot cast 'n/a' to long"
    assert body["location"] == {"kind": "kafka", "topic": shop, "partition": 0, "offset": 4}


@pytest.mark.parametrize(
    "letter_id", ["kafka:other-topic:0:4", "kafka:{dlq}:0:999", "kafka:{dlq}:7:1", "files:x:0", "x"]
)
def test_an_id_naming_no_dead_letter_is_404(api, shop, letter_id):
    url = f"/api/v1/channels/shop/dead-letters/{letter_id.format(dlq=shop)}/"

    assert api.get(url).status_code == 404


def test_a_channel_without_a_readable_target_says_why(api, spec):
    services.create_channel(name="plain", spec=spec)

    body = page_of(api, "plain")

    assert body["count"] == 0 and body["target"]["readable"] is False
    assert "errors.tolerance none" in body["target"]["note"]


def page_of(api, name: str) -> dict:
    response = api.get(f"/api/v1/channels/{name}/dead-letters/")
    assert response.status_code == 200, response.content
    return response.json()


def redrive_end(bootstrap: str) -> int:
    """The end offset of ``sluice-redrive.shop`` (0 when it does not exist): the broker
    lives for the whole session, so each test reads only what it wrote."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    if "sluice-redrive.shop" not in admin.list_topics(timeout=10).topics:
        return 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "check-end"})
    try:
        return consumer.get_watermark_offsets(TopicPartition("sluice-redrive.shop", 0), timeout=10)[
            1
        ]
    finally:
        consumer.close()


def redrive_topic_records(bootstrap: str, start: int) -> list[tuple[bytes, dict[str, str]]]:
    """The records of ``sluice-redrive.shop`` from offset ``start`` on, with their headers."""
    topic = "sluice-redrive.shop"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}"})
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        consumer.assign([TopicPartition(topic, 0, start)])
        found = []
        while len(found) < high - start:
            message = consumer.poll(10)
            assert message is not None and message.error() is None
            headers = {k: v.decode() for k, v in message.headers() or []}
            found.append((message.value(), headers))
        return found
    finally:
        consumer.close()


def test_redrive_writes_exactly_the_selected_originals_with_their_origin(
    api, shop, runs, kafka_bootstrap
):
    ids = [f"kafka:{shop}:0:6", f"kafka:{shop}:0:3"]
    start = redrive_end(kafka_bootstrap)

    response = api.post(
        "/api/v1/channels/shop/dead-letters/redrive", {"confirm": True, "ids": ids}, format="json"
    )

    assert response.status_code == 202, response.content
    body = response.json()
    assert body["topic"] == "sluice-redrive.shop" and body["count"] == 2
    assert body["run"] == {"id": "41", "kind": "redrive", "state": "PENDING"}
    written = redrive_topic_records(kafka_bootstrap, start)
    assert [value for value, _ in written] == [  # origin order
        dead_letter(3)["data"]["payload"].encode(),
        dead_letter(6)["data"]["payload"].encode(),
    ]
    assert written[0][1] == {
        "sluice-dead-letter-id": f"kafka:{shop}:0:3",
        "sluice-origin-topic": "orders",
        "sluice-origin-partition": "0",
        "sluice-origin-offset": "3",
        "sluice-origin-timestamp": dead_letter(3)["data"]["origin"]["timestamp"],
    }
    assert runs == [
        {
            "dead_letter_ids": ids,
            "channel": "shop",
            "topic": "sluice-redrive.shop",
            "start_offsets": {0: start},
            "end_offsets": {0: start + 2},
            "count": 2,
            "actor": "alice",
        }
    ]
    audit = AuditEvent.objects.get(action="channel.dead_letters.redrive")
    assert (audit.object_id, audit.outcome, audit.changes) == (
        "shop",
        202,
        {"ids": ids, "confirm": True},
    )
    assert scraped_redriven() == {"shop": 2.0}


def test_redrive_all_that_match_a_filter(api, shop, runs, kafka_bootstrap):
    start = redrive_end(kafka_bootstrap)
    response = api.post(
        "/api/v1/channels/shop/dead-letters/redrive",
        {"all": True, "error_class": "CastError", "until": "2026-11-26T10:05:00Z", "confirm": True},
        format="json",
    )

    assert response.status_code == 202, response.content
    written = redrive_topic_records(kafka_bootstrap, start)
    offsets = [int(headers["sluice-origin-offset"]) for _, headers in written]
    assert offsets == [0, 2, 4]
    assert runs[0]["count"] == 3


def test_without_redrive_runs_nothing_is_written_and_503_says_why(
    api, shop, kafka_bootstrap, monkeypatch
):
    # An installation without the run executor: importing it fails.
    monkeypatch.setitem(sys.modules, "console.services.runs", None)
    start = redrive_end(kafka_bootstrap)

    response = api.post(
        "/api/v1/channels/shop/dead-letters/redrive",
        {"confirm": True, "ids": [f"kafka:{shop}:0:1"]},
        format="json",
    )

    assert response.status_code == 503
    assert "start_redrive is missing" in response.json()["detail"]
    assert redrive_end(kafka_bootstrap) == start


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "ids"),
        ({"ids": ["a"], "all": True}, "ids"),
        ({"ids": ["a"], "error_class": "CastError"}, "ids"),
        ({"ids": []}, "ids"),
        ({"ids": ["kafka:nowhere:0:1"]}, "ids"),
        ({"all": True, "error_class": "NoSuchError"}, "all"),
    ],
)
def test_a_redrive_of_nothing_is_refused(api, shop, runs, body, field):
    response = api.post(
        "/api/v1/channels/shop/dead-letters/redrive", {**body, "confirm": True}, format="json"
    )

    assert response.status_code == 400, response.content
    assert field in response.json()
    assert runs == []


def test_viewers_see_dead_letters_but_only_operators_redrive(shop, runs, django_user_model):
    from tests.unit.console.test_roles import client_for

    viewer = client_for("viewer", django_user_model)
    assert viewer.get("/api/v1/channels/shop/dead-letters/").status_code == 200
    refused = viewer.post(
        "/api/v1/channels/shop/dead-letters/redrive",
        {"confirm": True, "ids": [f"kafka:{shop}:0:1"]},
        format="json",
    )
    assert refused.status_code == 403
    assert "operator role" in refused.json()["detail"]
    assert runs == []


def scraped_redriven() -> dict[str, float]:
    text = generate_latest(metrics.registry()).decode()
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "sluice_dead_letters_redriven_total":
                found[sample.labels["channel"]] = sample.value
    return found


def test_a_jdbc_target_is_listed_and_read_one_by_one(api, spec, tmp_path):
    from pipelines.sinks.jdbc import upsert_rows
    from pipelines.spec.configs.jdbc import JdbcSinkConfig

    target = {"url": f"sqlite:///{tmp_path}/dead.db", "table": "dead_letters"}
    spec["errors"] = {"tolerance": "all", "dead_letter": {"type": "jdbc", "config": target}}
    services.create_channel(name="tabled", spec=spec)
    for seq in (1, 2):  # as the JDBC sink writes dead-letter events (content cloudevents)
        event = dead_letter(seq)
        row = (event["id"], event["source"], event["type"], event["time"], "x", json.dumps(event))
        upsert_rows(JdbcSinkConfig(**target), [row])

    body = page_of(api, "tabled")

    assert body["target"]["type"] == "jdbc" and body["target"]["readable"] is True
    assert [d["origin"]["offset"] for d in body["results"]] == [2, 1]
    one = api.get(f"/api/v1/channels/tabled/dead-letters/{body['results'][1]['id']}/")
    assert one.status_code == 200 and one.json()["payload"] == dead_letter(1)["data"]["payload"]


def test_a_selection_is_read_in_one_pass_and_names_what_it_skipped(
    api, shop, runs, kafka_bootstrap
):
    start = redrive_end(kafka_bootstrap)
    ids = [f"kafka:{shop}:0:{offset}" for offset in (9, 0, 5)] + [
        f"kafka:{shop}:0:10",  # the record that is no dead letter
        f"kafka:{shop}:0:999",  # past the end
        "files:part-0.txt:0",  # another target's
    ]

    response = api.post(
        "/api/v1/channels/shop/dead-letters/redrive", {"confirm": True, "ids": ids}, format="json"
    )

    assert response.status_code == 202, response.content
    assert response.json()["skipped"] == {i: "no such dead letter" for i in ids[3:]}
    written = redrive_topic_records(kafka_bootstrap, start)
    assert [int(h["sluice-origin-offset"]) for _, h in written] == [0, 5, 9]


def test_a_redrive_hands_its_records_to_a_redrive_run(api, shop, kafka_bootstrap):
    """Without the recorder: the real console.services.runs.start_redrive records the run
    the executor then runs over exactly the records written (test_run_executor.py)."""
    from console.models import ChannelRun

    start = redrive_end(kafka_bootstrap)
    ids = [f"kafka:{shop}:0:3", f"kafka:{shop}:0:6"]
    response = api.post(
        "/api/v1/channels/shop/dead-letters/redrive", {"confirm": True, "ids": ids}, format="json"
    )

    assert response.status_code == 202, response.content
    body = response.json()
    run = ChannelRun.objects.get(id=body["run"]["id"])
    assert (run.kind, run.state, body["run"]["state"]) == ("redrive", "PENDING", "PENDING")
    assert run.topic == "sluice-redrive.shop" and run.expected == 2
    assert run.start_offsets == {"sluice-redrive.shop": {"0": start}}
    assert run.end_offsets == {"sluice-redrive.shop": {"0": start + 2}}
    assert run.created_by == "user:alice"


def test_a_redrive_into_live_targets_must_be_confirmed_and_writes_nothing_before(
    api, shop, kafka_bootstrap
):
    start = redrive_end(kafka_bootstrap)
    body = {"ids": [f"kafka:{shop}:0:3"]}

    response = api.post("/api/v1/channels/shop/dead-letters/redrive", body, format="json")

    assert response.status_code == 400, response.content
    (message,) = response.json()["confirm"]
    assert "kafka topic big-orders" in message and "confirm: true" in message
    assert redrive_end(kafka_bootstrap) == start, "nothing written before the confirmation"


def test_redriven_letters_are_marked_with_the_run_and_its_outcome(api, shop, kafka_bootstrap):
    from console.models import ChannelRun

    ids = [f"kafka:{shop}:0:3", f"kafka:{shop}:0:6"]
    before = page(api)["results"]
    assert all(letter["redriven"] is None for letter in before)

    response = api.post(
        "/api/v1/channels/shop/dead-letters/redrive", {"ids": ids, "confirm": True}, format="json"
    )
    assert response.status_code == 202, response.content
    run = ChannelRun.objects.get(id=response.json()["run"]["id"])
    assert sorted(run.dead_letter_ids) == sorted(ids)
    ChannelRun.objects.filter(pk=run.pk).update(
        state="FAILED", events_read=2, events_written=1, events_failed=1
    )

    marked = {letter["id"]: letter["redriven"] for letter in page(api)["results"]}
    assert {i for i, mark in marked.items() if mark} == set(ids)
    mark = marked[ids[0]]
    assert mark["run"] == str(run.id) and mark["by"] == "user:alice"
    assert mark["state"] == "FAILED" and mark["outcome"] == "1 failed again, 1 written"
    detail = api.get(f"/api/v1/channels/shop/dead-letters/{ids[1]}/").json()
    assert detail["redriven"]["run"] == str(run.id)
