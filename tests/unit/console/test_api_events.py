"""POST /api/v1/channels/{name}/events: CloudEvents and plain JSON into the ingest topic."""

from __future__ import annotations

import json
import uuid

import pytest

from console import services
from console.models import Revision
from console.services.cloudevents import rfc3339_utc

pytestmark = pytest.mark.django_db

TOPIC = "sluice.ingest.web-orders"
URL = "/api/v1/channels/web-orders/events"
STRUCTURED = "application/cloudevents+json"
BATCH = "application/cloudevents-batch+json"


def http_spec(**config) -> dict:
    return {
        "source": {"type": "http", "config": config},
        "transforms": [],
        "sink": {"type": "kafka", "config": {"bootstrap_servers": "k:9092", "topic": "out"}},
    }


@pytest.fixture
def channel(user):
    return services.create_channel(name="web-orders", spec=http_spec(), user=user)


def event(**overrides) -> dict:
    base = {
        "specversion": "1.0",
        "id": "e-1",
        "source": "/shop",
        "type": "com.example.order",
        "data": {"total": 12},
    }
    return {**base, **overrides}


def post(api, body, content_type=STRUCTURED, url=URL, **headers):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return api.post(url, raw, content_type=content_type, headers=headers)


def written(ingest_kafka) -> list[tuple[str, dict]]:
    return [(key, json.loads(value)) for key, value in ingest_kafka.records.get(TOPIC, [])]


# -- modes ---------------------------------------------------------------------------------


def test_a_structured_event_is_written_keyed_by_its_id(api, channel, ingest_kafka):
    sent = event(time="2024-06-01T10:00:00+02:00", subject="order-7", tenant="acme")

    response = post(api, sent)

    assert response.status_code == 202, response.content
    assert response.json() == {
        "accepted": 1,
        "rejected": 0,
        "results": [{"index": 0, "id": "e-1", "status": "accepted"}],
    }
    assert written(ingest_kafka) == [("e-1", {**sent, "time": "2024-06-01T08:00:00Z"})]


def test_a_batch_answers_per_event_and_writes_only_the_valid_ones(api, channel, ingest_kafka):
    batch = [
        event(id="a"),
        event(id="b", time="yesterday"),
        {"specversion": "1.0", "source": "/shop", "type": "t"},
        event(id="d", specversion="0.3", **{"Bad-Name": 1}),
        "not an object",
        event(id="f"),
    ]

    response = post(api, batch, BATCH)

    assert response.status_code == 207, response.content
    body = response.json()
    assert (body["accepted"], body["rejected"]) == (2, 4)
    results = body["results"]
    assert [r["status"] for r in results] == [
        "accepted",
        "rejected",
        "rejected",
        "rejected",
        "rejected",
        "accepted",
    ]
    assert results[0] == {"index": 0, "id": "a", "status": "accepted"}
    assert list(results[1]["errors"]) == ["time"]
    assert "RFC 3339" in results[1]["errors"]["time"][0]
    assert results[2]["errors"] == {"id": ["required attribute is missing"]}
    assert set(results[3]["errors"]) == {"specversion", "Bad-Name"}
    assert list(results[4]["errors"]) == ["event"]
    assert [key for key, _ in written(ingest_kafka)] == ["a", "f"]


def test_values_strict_json_cannot_carry_are_rejected(api, channel, ingest_kafka):
    body = b'[{"specversion": "1.0", "id": "nan", "source": "/s", "type": "t", "data": NaN},'
    body += b' {"specversion": "1.0", "id": "sur", "source": "/s", "type": "t", "x": "\\ud800"},'
    body += b' {"specversion": "1.0", "id": "ok", "source": "/s", "type": "t", "data": 1e400}]'

    response = post(api, body, BATCH)

    assert response.status_code == 400, response.content
    assert [r["errors"]["event"][0][:30] for r in response.json()["results"]] == [
        "holds a value JSON cannot carr"
    ] * 3
    assert written(ingest_kafka) == []


def test_a_batch_with_no_valid_event_is_a_400_with_results(api, channel, ingest_kafka):
    response = post(api, [event(id=""), event(data_base64="AAEC")], BATCH)

    assert response.status_code == 400
    body = response.json()
    assert (body["accepted"], body["rejected"]) == (0, 2)
    assert body["results"][0]["errors"] == {"id": ["must be a non-empty string"]}
    assert list(body["results"][1]["errors"]) == ["data_base64"]
    assert written(ingest_kafka) == []


def test_a_binary_mode_event_takes_its_attributes_from_ce_headers(api, channel, ingest_kafka):
    response = post(
        api,
        b'{"total": 3}',
        "application/json; charset=utf-8",
        **{
            "ce-specversion": "1.0",
            "ce-id": "bin-1",
            "ce-source": "/shop/web",
            "ce-type": "com.example.order",
            "ce-subject": "order%2042",
            "ce-time": "2024-06-01T08:00:00.120Z",
            "ce-traceparent": "00-abc-01",
        },
    )

    assert response.status_code == 202, response.content
    assert written(ingest_kafka) == [
        (
            "bin-1",
            {
                "specversion": "1.0",
                "id": "bin-1",
                "source": "/shop/web",
                "type": "com.example.order",
                "subject": "order 42",
                "time": "2024-06-01T08:00:00.12Z",
                "traceparent": "00-abc-01",
                "datacontenttype": "application/json; charset=utf-8",
                "data": {"total": 3},
            },
        )
    ]


def test_binary_mode_text_data_and_a_missing_header(api, channel, ingest_kafka):
    headers = {"ce-specversion": "1.0", "ce-id": "t-1", "ce-source": "/s", "ce-type": "t"}
    assert post(api, b"hello", "text/plain", **headers).status_code == 202
    assert written(ingest_kafka)[0][1]["data"] == "hello"

    del headers["ce-type"]
    response = post(api, b"hello", "text/plain", **headers)
    assert response.status_code == 400
    assert response.json()["results"][0]["errors"] == {"type": ["required attribute is missing"]}


def test_plain_json_is_wrapped_with_a_fresh_id_and_the_default_type(api, user, ingest_kafka):
    services.create_channel(
        name="web-orders", spec=http_spec(default_type="com.example.web"), user=user
    )

    one = post(api, {"total": 1}, "application/json")
    many = post(api, [{"total": 2}, 3, {"total": 4}], "application/json")

    assert one.status_code == 202, one.content
    assert many.status_code == 207, many.content
    assert many.json()["results"][1] == {
        "index": 1,
        "status": "rejected",
        "errors": {"event": ["must be a JSON object"]},
    }
    records = written(ingest_kafka)
    assert [value["data"] for _, value in records] == [{"total": 1}, {"total": 2}, {"total": 4}]
    for key, value in records:
        assert key == value["id"] and uuid.UUID(key).version == 4
        assert value["source"] == "/sluice/channels/web-orders/events"
        assert value["type"] == "com.example.web"
        assert value["specversion"] == "1.0" and value["datacontenttype"] == "application/json"
        assert rfc3339_utc(value["time"]) == value["time"]
    assert one.json()["results"][0]["id"] == records[0][0]


# -- limits and refusals -------------------------------------------------------------------


def test_a_body_over_the_limit_is_a_413_and_nothing_is_written(
    api, channel, ingest_kafka, settings
):
    settings.SLUICE_INGEST_MAX_REQUEST_BYTES = 200
    response = post(api, [event(id=str(n)) for n in range(5)], BATCH)

    assert response.status_code == 413
    assert "limit is 200" in response.json()["detail"]
    assert written(ingest_kafka) == []


def test_more_events_than_the_batch_limit_is_a_413(api, channel, ingest_kafka, settings):
    settings.SLUICE_INGEST_MAX_BATCH = 3
    response = post(api, [event(id=str(n)) for n in range(4)], BATCH)

    assert response.status_code == 413
    assert "4 events" in response.json()["detail"]
    assert written(ingest_kafka) == []


def test_an_event_over_max_event_bytes_is_rejected_alone(api, user, ingest_kafka):
    services.create_channel(name="web-orders", spec=http_spec(max_event_bytes=300), user=user)

    response = post(api, [event(id="small"), event(id="big", data="x" * 400)], BATCH)

    assert response.status_code == 207
    big = response.json()["results"][1]
    assert big["status"] == "rejected" and big["id"] == "big"
    assert "the limit is 300" in big["errors"]["event"][0]
    assert [key for key, _ in written(ingest_kafka)] == ["small"]


@pytest.mark.parametrize(
    ("body", "content_type", "code"),
    [
        (b"{not json", STRUCTURED, 400),
        (b"[]", BATCH, 400),
        (b'{"a": 1}', BATCH, 400),
        (b"42", "application/json", 400),
        (b"hello", "text/plain", 415),
    ],
)
def test_an_unreadable_request_is_refused_whole(
    api, channel, ingest_kafka, body, content_type, code
):
    response = post(api, body, content_type)

    assert response.status_code == code, response.content
    assert response.json()["detail"]
    assert written(ingest_kafka) == []


def test_events_kafka_did_not_confirm_make_a_503_naming_them(api, channel, ingest_kafka):
    ingest_kafka.refuse = {"b"}

    response = post(api, [event(id="a"), event(id="b"), event(id="c", time="x")], BATCH)

    assert response.status_code == 503
    body = response.json()
    assert (body["accepted"], body["rejected"], body["not_confirmed"]) == (1, 1, 1)
    assert body["results"][1] == {
        "index": 1,
        "id": "b",
        "status": "not_confirmed",
        "errors": {"kafka": ["Kafka refused it: Local: Message timed out"]},
    }


def test_kafka_unreachable_is_a_503_before_anything_is_written(api, channel, ingest_kafka):
    ingest_kafka.topics.clear()
    ingest_kafka.unreachable = True

    response = post(api, event())

    assert response.status_code == 503
    assert "unreachable" in response.json()["detail"]


def test_a_channel_without_an_http_source_is_a_409(api, user, spec):
    services.create_channel(name="kafka-fed", spec=spec, user=user)

    response = post(api, event(), url="/api/v1/channels/kafka-fed/events")

    assert response.status_code == 409
    assert "'http'" in response.json()["detail"]


def test_unknown_channel_is_a_404_and_anonymous_is_a_401(api, anon, channel):
    assert post(api, event(), url="/api/v1/channels/nope/events").status_code == 404
    assert post(anon, event()).status_code == 401


# -- topic and deployment ------------------------------------------------------------------


def test_the_ingest_topic_is_created_with_the_channel_and_filled_in_at_start(
    api, channel, ingest_kafka, runtime
):
    assert ingest_kafka.topics == {TOPIC}

    assert api.post("/api/v1/channels/web-orders/start").status_code == 202

    deployed = runtime.deployments["web-orders"].spec["source"]["config"]
    assert deployed["ingest_topic"] == TOPIC
    assert deployed["bootstrap_servers"] == ingest_kafka.bootstrap_servers
    saved = Revision.objects.get(channel=channel).spec["source"]["config"]
    assert saved["ingest_topic"] is None and saved["bootstrap_servers"] is None


def test_creating_works_without_kafka_but_starting_needs_it(api, user, ingest_kafka, runtime):
    ingest_kafka.unreachable = True
    services.create_channel(name="web-orders", spec=http_spec(), user=user)

    response = api.post("/api/v1/channels/web-orders/start")

    assert response.status_code == 503
    assert "sluice.ingest.web-orders" in response.json()["detail"]
    assert runtime.deployments == {}


def test_http_source_config_is_validated(api):
    response = api.post(
        "/api/v1/plugins/source/http/validate",
        {"config": {"max_event_bytes": 0, "ingest_topic": "bad topic!"}},
        format="json",
    )

    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"config.max_event_bytes", "config.ingest_topic"}
    valid = api.post("/api/v1/plugins/source/http/validate", {"config": {}}, format="json")
    assert valid.json()["config"]["default_type"] == "sluice.http.event"
