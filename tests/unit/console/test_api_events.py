"""POST /api/v1/channels/{name}/events: CloudEvents and plain JSON into the ingest topic.

Producers authenticate with the channel's ingestion token (``producer``); who else may post,
the rate limit (a real Redis) and the size limits are at the end.
"""

from __future__ import annotations

import json
import uuid

import pytest
import redis
from django.middleware.csrf import _get_new_csrf_string, _mask_cipher_secret
from rest_framework.test import APIClient

from console import services
from console.models import Channel, Revision
from console.permissions import grant_role
from console.runtime import set_runtime
from console.selectors.cloudevents import rfc3339_utc
from console.services.fleet import bulk_lifecycle
from console.services.ingest.rate import bucket_key
from console.services.ingest.tokens import issue_ingest_token, revoke_ingest_token

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


def token_client(channel: Channel, header: str = "Authorization") -> APIClient:
    """A producer: no console login, the channel's ingestion token."""
    token = issue_ingest_token(channel).token
    client = APIClient(enforce_csrf_checks=True)
    if header == "Authorization":
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    else:
        client.credentials(HTTP_X_SLUICE_TOKEN=token)
    return client


@pytest.fixture
def producer(channel) -> APIClient:
    return token_client(channel)


@pytest.fixture(autouse=True)
def rate_limit_redis(settings, redis_url, runtime):
    """The rate limit's buckets live in the session's real Redis; each test starts full."""
    settings.REDIS_URL = redis_url
    set_runtime(runtime)  # changing REDIS_URL drops the runtime; keep the fake
    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter(f"{settings.SLUICE_REDIS_PREFIX}:ingest:rate:*"):
        client.delete(key)
    yield client


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


def test_a_structured_event_is_written_keyed_by_its_id(producer, channel, ingest_kafka):
    sent = event(time="2024-06-01T10:00:00+02:00", subject="order-7", tenant="acme")

    response = post(producer, sent)

    assert response.status_code == 202, response.content
    assert response.json() == {
        "accepted": 1,
        "rejected": 0,
        "results": [{"index": 0, "id": "e-1", "status": "accepted"}],
    }
    assert written(ingest_kafka) == [("e-1", {**sent, "time": "2024-06-01T08:00:00Z"})]


def test_a_batch_answers_per_event_and_writes_only_the_valid_ones(producer, channel, ingest_kafka):
    batch = [
        event(id="a"),
        event(id="b", time="yesterday"),
        {"specversion": "1.0", "source": "/shop", "type": "t"},
        event(id="d", specversion="0.3", **{"Bad-Name": 1}),
        "not an object",
        event(id="f"),
    ]

    response = post(producer, batch, BATCH)

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


def test_values_strict_json_cannot_carry_are_rejected(producer, channel, ingest_kafka):
    body = b'[{"specversion": "1.0", "id": "nan", "source": "/s", "type": "t", "data": NaN},'
    body += b' {"specversion": "1.0", "id": "sur", "source": "/s", "type": "t", "x": "\\ud800"},'
    body += b' {"specversion": "1.0", "id": "ok", "source": "/s", "type": "t", "data": 1e400}]'

    response = post(producer, body, BATCH)

    assert response.status_code == 400, response.content
    assert [r["errors"]["event"][0][:30] for r in response.json()["results"]] == [
        "holds a value JSON cannot carr"
    ] * 3
    assert written(ingest_kafka) == []


def test_a_batch_with_no_valid_event_is_a_400_with_results(producer, channel, ingest_kafka):
    response = post(producer, [event(id=""), event(data_base64="AAEC")], BATCH)

    assert response.status_code == 400
    body = response.json()
    assert (body["accepted"], body["rejected"]) == (0, 2)
    assert body["results"][0]["errors"] == {"id": ["must be a non-empty string"]}
    assert list(body["results"][1]["errors"]) == ["data_base64"]
    assert written(ingest_kafka) == []


def test_a_binary_mode_event_takes_its_attributes_from_ce_headers(producer, channel, ingest_kafka):
    response = post(
        producer,
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


def test_binary_mode_text_data_and_a_missing_header(producer, channel, ingest_kafka):
    headers = {"ce-specversion": "1.0", "ce-id": "t-1", "ce-source": "/s", "ce-type": "t"}
    assert post(producer, b"hello", "text/plain", **headers).status_code == 202
    assert written(ingest_kafka)[0][1]["data"] == "hello"

    del headers["ce-type"]
    response = post(producer, b"hello", "text/plain", **headers)
    assert response.status_code == 400
    assert response.json()["results"][0]["errors"] == {"type": ["required attribute is missing"]}


def test_plain_json_is_wrapped_with_a_fresh_id_and_the_default_type(user, ingest_kafka):
    created = services.create_channel(
        name="web-orders", spec=http_spec(default_type="com.example.web"), user=user
    )
    api = token_client(created, header="X-Sluice-Token")

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
    producer, channel, ingest_kafka, settings
):
    settings.SLUICE_INGEST_MAX_REQUEST_BYTES = 200
    response = post(producer, [event(id=str(n)) for n in range(5)], BATCH)

    assert response.status_code == 413
    assert "limit is 200" in response.json()["detail"]
    assert written(ingest_kafka) == []


def test_more_events_than_the_batch_limit_is_a_413(producer, channel, ingest_kafka, settings):
    settings.SLUICE_INGEST_MAX_BATCH = 3
    response = post(producer, [event(id=str(n)) for n in range(4)], BATCH)

    assert response.status_code == 413
    assert "4 events" in response.json()["detail"]
    assert written(ingest_kafka) == []


def test_an_event_over_max_event_bytes_is_rejected_alone(user, ingest_kafka):
    created = services.create_channel(
        name="web-orders", spec=http_spec(max_event_bytes=300), user=user
    )
    api = token_client(created)

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
    producer, channel, ingest_kafka, body, content_type, code
):
    response = post(producer, body, content_type)

    assert response.status_code == code, response.content
    assert response.json()["detail"]
    assert written(ingest_kafka) == []


def test_events_kafka_did_not_confirm_make_a_503_naming_them(producer, channel, ingest_kafka):
    ingest_kafka.refuse = {"b"}

    response = post(producer, [event(id="a"), event(id="b"), event(id="c", time="x")], BATCH)

    assert response.status_code == 503
    body = response.json()
    assert (body["accepted"], body["rejected"], body["not_confirmed"]) == (1, 1, 1)
    assert body["results"][1] == {
        "index": 1,
        "id": "b",
        "status": "not_confirmed",
        "errors": {"kafka": ["Kafka refused it: Local: Message timed out"]},
    }


def test_kafka_unreachable_is_a_503_before_anything_is_written(producer, channel, ingest_kafka):
    ingest_kafka.topics.clear()
    ingest_kafka.unreachable = True

    response = post(producer, event())

    assert response.status_code == 503
    assert "unreachable" in response.json()["detail"]


def test_a_channel_without_an_http_source_is_a_409(user, spec):
    created = services.create_channel(name="kafka-fed", spec=spec, user=user)

    response = post(token_client(created), event(), url="/api/v1/channels/kafka-fed/events")

    assert response.status_code == 409
    assert "'http'" in response.json()["detail"]


def test_unknown_channel_is_a_404_for_an_operator(api, channel):
    assert post(api, event(), url="/api/v1/channels/nope/events").status_code == 404


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


def test_the_ingest_topic_keeps_the_channels_archive(api, user, ingest_kafka, runtime):
    """``archive_hours`` is the ingest topic's retention (what a replay can read again):
    set when the channel is created, changed with a revision, the cluster's default when
    unset, set again when a revision is deployed."""
    services.create_channel(name="web-orders", spec=http_spec(archive_hours=48), user=user)
    assert ingest_kafka.retention == {TOPIC: 48 * 3_600_000}

    channel = services.update_channel(
        Channel.objects.get(name="web-orders"), spec=http_spec(archive_hours=720), user=user
    )
    assert ingest_kafka.retention == {TOPIC: 720 * 3_600_000}
    services.update_channel(channel, spec=http_spec(), user=user)
    assert ingest_kafka.retention == {TOPIC: None}

    ingest_kafka.retention.clear()
    assert api.post("/api/v1/channels/web-orders/start").status_code == 202
    assert ingest_kafka.retention == {TOPIC: None}


def test_an_archive_out_of_range_is_a_400_with_its_path(api):
    for hours in (0, 24 * 365 + 1, "a week"):
        response = api.post(
            "/api/v1/channels/",
            {"name": "web-orders", "spec": http_spec(archive_hours=hours)},
            format="json",
        )
        assert response.status_code == 400, hours
        assert "spec.source.config.archive_hours" in json.dumps(response.json()), response.json()


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


# -- who may post ----------------------------------------------------------------------------


def test_no_credentials_is_a_401_with_a_bearer_challenge(anon, channel, ingest_kafka):
    response = post(anon, event())

    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert "/api/v1/channels/web-orders/ingest-token" in response.json()["detail"]
    assert written(ingest_kafka) == []


@pytest.mark.parametrize("header", ["Authorization", "X-Sluice-Token"])
def test_the_right_token_in_either_header_posts(channel, ingest_kafka, header):
    response = post(token_client(channel, header), event())

    assert response.status_code == 202, response.content
    assert [key for key, _ in written(ingest_kafka)] == ["e-1"]


def test_a_wrong_token_is_a_403(anon, channel, ingest_kafka):
    issue_ingest_token(channel)
    anon.credentials(HTTP_AUTHORIZATION="Bearer slk_not-the-token")

    response = post(anon, event())

    assert response.status_code == 403
    assert "not the ingestion token of channel 'web-orders'" in response.json()["detail"]
    assert written(ingest_kafka) == []


def test_another_channels_token_is_a_403(user, channel, ingest_kafka):
    other = services.create_channel(name="other", spec=http_spec(), user=user)
    issue_ingest_token(channel)

    response = post(token_client(other), event())

    assert response.status_code == 403
    assert written(ingest_kafka) == []


def test_a_rotated_or_revoked_token_stops_working(channel, ingest_kafka):
    old = token_client(channel)
    assert post(old, event(id="a")).status_code == 202
    new = token_client(channel)  # rotates

    assert post(old, event(id="b")).status_code == 403
    assert post(new, event(id="c")).status_code == 202
    revoke_ingest_token(channel)
    revoked = post(new, event(id="d"))
    assert revoked.status_code == 403
    assert "has no ingestion token: issue one with POST" in revoked.json()["detail"]
    assert [key for key, _ in written(ingest_kafka)] == ["a", "c"]


def test_a_channel_with_no_token_issued_says_how_to_issue_one(anon, channel, ingest_kafka):
    anon.credentials(HTTP_AUTHORIZATION="Bearer slk_anything")

    response = post(anon, event())

    assert response.status_code == 403
    detail = response.json()["detail"]
    assert "no ingestion token" in detail and "/api/v1/channels/web-orders/ingest-token" in detail


def test_an_unknown_channel_answers_a_token_like_a_wrong_one(producer, channel):
    response = post(producer, event(), url="/api/v1/channels/nope/events")

    assert response.status_code == 403  # a token does not reveal which channels exist


def test_a_malformed_bearer_header_is_a_401(anon, channel):
    anon.credentials(HTTP_AUTHORIZATION="Bearer two words")

    response = post(anon, event())

    assert response.status_code == 401
    assert "exactly one token" in response.json()["detail"]


def test_a_token_is_no_console_login(producer, channel):
    assert producer.get("/api/v1/channels/").status_code == 401
    assert producer.post("/api/v1/channels/web-orders/start").status_code == 401


def _session_client(django_user_model, name, role=None) -> APIClient:
    person = django_user_model.objects.create_user(name, password="pw-pw-pw-pw")
    if role:
        grant_role(person, role)
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(person)
    return client


def _csrf(client: APIClient) -> str:
    """Set a CSRF cookie on ``client``; return the matching X-CSRFToken value."""
    secret = _get_new_csrf_string()
    client.cookies["csrftoken"] = secret
    return _mask_cipher_secret(secret)


def test_a_session_operator_may_post_with_csrf(django_user_model, channel, ingest_kafka):
    operator = _session_client(django_user_model, "olga", "operator")

    without_csrf = post(operator, event(id="a"))
    with_csrf = post(operator, event(id="b"), **{"X-CSRFToken": _csrf(operator)})

    assert without_csrf.status_code == 403
    assert "CSRF" in without_csrf.json()["detail"]
    assert with_csrf.status_code == 202, with_csrf.content
    assert [key for key, _ in written(ingest_kafka)] == ["b"]


def test_a_session_viewer_may_not_post(django_user_model, channel, ingest_kafka):
    viewer = _session_client(django_user_model, "vic", "viewer")

    response = post(viewer, event(), **{"X-CSRFToken": _csrf(viewer)})

    assert response.status_code == 403
    assert "operator role (console.operate_channel)" in response.json()["detail"]
    assert written(ingest_kafka) == []


def test_an_operator_with_a_drf_token_may_post(api, channel, ingest_kafka):
    assert post(api, event()).status_code == 202


# -- rate limit (real Redis) ---------------------------------------------------------------


def batch_of(count: int, start: int = 0) -> list[dict]:
    return [event(id=f"r-{n}") for n in range(start, start + count)]


def set_bucket_clock(client: redis.Redis, channel: Channel, *, filled_ago: float) -> None:
    """The rate limit's clock, controlled: the channel's bucket was last filled ``filled_ago``
    seconds ago by Redis's clock (the one the limit reads). Negative: in the future, so
    nothing refills until a test says so, however slow the machine between two requests."""
    seconds, micros = client.time()
    client.hset(bucket_key(channel), "at", str(seconds + micros / 1_000_000 - filled_ago))


def hold_bucket_clock(client: redis.Redis, channel: Channel) -> None:
    """Nothing refills the channel's bucket for the next hour."""
    set_bucket_clock(client, channel, filled_ago=-3600)


def test_a_batch_over_the_remaining_budget_is_a_429_and_nothing_is_written(
    producer, channel, ingest_kafka, settings, rate_limit_redis
):
    Channel.objects.filter(pk=channel.pk).update(ingest_rate_limit=5)  # burst: 10 events
    settings.SLUICE_INGEST_BURST_SECONDS = 2.0

    first = post(producer, batch_of(8), BATCH)
    hold_bucket_clock(rate_limit_redis, channel)
    second = post(producer, batch_of(5, start=8), BATCH)

    assert first.status_code == 202, first.content
    assert second.status_code == 429
    assert int(second["Retry-After"]) >= 1
    detail = second.json()["detail"]
    assert "accepts 5 events/s (bursts of 10)" in detail and "5 events" in detail
    assert [key for key, _ in written(ingest_kafka)] == [f"r-{n}" for n in range(8)]


def test_every_event_counts_valid_or_not(
    producer, channel, ingest_kafka, settings, rate_limit_redis
):
    settings.SLUICE_INGEST_RATE_LIMIT = 2
    settings.SLUICE_INGEST_BURST_SECONDS = 2.0  # burst: 4

    assert post(producer, [event(id="a"), event(id="")] * 2, BATCH).status_code == 207
    hold_bucket_clock(rate_limit_redis, channel)
    assert post(producer, event(id="late")).status_code == 429


def test_the_bucket_refills_at_the_rate(
    producer, channel, ingest_kafka, settings, rate_limit_redis
):
    settings.SLUICE_INGEST_RATE_LIMIT = 10
    settings.SLUICE_INGEST_BURST_SECONDS = 1.0  # burst: 10, refilled in 1 s

    assert post(producer, batch_of(10), BATCH).status_code == 202
    hold_bucket_clock(rate_limit_redis, channel)
    assert post(producer, batch_of(10, 10), BATCH).status_code == 429
    set_bucket_clock(rate_limit_redis, channel, filled_ago=1.0)  # refilled
    assert post(producer, batch_of(10, 20), BATCH).status_code == 202


def test_the_limit_is_per_channel(user, channel, ingest_kafka, settings, rate_limit_redis):
    settings.SLUICE_INGEST_RATE_LIMIT = 1
    settings.SLUICE_INGEST_BURST_SECONDS = 1.0
    other = services.create_channel(name="other", spec=http_spec(), user=user)

    assert post(token_client(channel), event(id="a")).status_code == 202
    hold_bucket_clock(rate_limit_redis, channel)
    assert post(token_client(channel), event(id="b")).status_code == 429
    other_url = "/api/v1/channels/other/events"
    assert post(token_client(other), event(id="c"), url=other_url).status_code == 202


def test_a_request_bigger_than_the_burst_is_a_413(producer, channel, ingest_kafka, settings):
    settings.SLUICE_INGEST_RATE_LIMIT = 2
    settings.SLUICE_INGEST_BURST_SECONDS = 1.0

    response = post(producer, batch_of(3), BATCH)

    assert response.status_code == 413
    assert "bursts of at most 2: send smaller batches" in response.json()["detail"]
    assert written(ingest_kafka) == []


def test_redis_down_fails_open(producer, channel, ingest_kafka, settings, caplog):
    settings.SLUICE_INGEST_RATE_LIMIT = 1
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there

    responses = [post(producer, event(id=str(n))).status_code for n in range(3)]

    assert responses == [202, 202, 202]
    assert len(written(ingest_kafka)) == 3


# -- size limits -----------------------------------------------------------------------------


def test_the_site_wide_event_size_cap_bounds_every_channel(
    producer, channel, ingest_kafka, settings
):
    settings.SLUICE_INGEST_MAX_EVENT_BYTES = 300  # the channel's own default is 256 KiB

    response = post(producer, [event(id="small"), event(id="big", data="x" * 400)], BATCH)

    assert response.status_code == 207
    big = response.json()["results"][1]
    assert big["status"] == "rejected"
    assert "the limit is 300" in big["errors"]["event"][0]
    assert [key for key, _ in written(ingest_kafka)] == ["small"]


def test_a_declared_length_over_the_limit_is_a_413_before_reading(
    producer, channel, ingest_kafka, settings
):
    settings.SLUICE_INGEST_MAX_REQUEST_BYTES = 10

    response = post(producer, event())

    assert response.status_code == 413
    assert "the limit is 10" in response.json()["detail"]


def test_a_channel_deleted_while_kafka_is_away_is_deleted_and_its_topic_goes_later(
    producer, channel, ingest_kafka, user, caplog
):
    """The topic of a deleted channel goes with it; when Kafka cannot be reached then, the
    channel is deleted all the same, the warning says so, and a new channel of the name
    deletes the topic left behind (its events are not the new channel's)."""
    assert post(producer, event()).status_code == 202
    ingest_kafka.unreachable = True
    services.delete_channel(channel, user=user)
    assert not Channel.objects.filter(name="web-orders").exists()
    assert "could not delete the ingest topic sluice.ingest.web-orders" in caplog.text
    assert TOPIC in ingest_kafka.topics and written(ingest_kafka), "left behind"

    ingest_kafka.unreachable = False
    services.create_channel(name="web-orders", spec=http_spec(), user=user)
    assert TOPIC in ingest_kafka.topics and written(ingest_kafka) == []


def test_a_bulk_delete_takes_the_ingest_topics_as_a_single_delete_does(user, ingest_kafka):
    """One lifecycle path: the channels a bulk request deletes lose their ingest topics as
    one deleted alone does (the bulk delete once left them behind)."""
    services.create_channel(name="web-orders", spec=http_spec(), user=user)
    services.create_channel(name="web-clicks", spec=http_spec(), user=user)
    services.create_channel(name="web-kept", spec=http_spec(), user=user)
    assert {TOPIC, "sluice.ingest.web-clicks"} <= ingest_kafka.topics

    results = bulk_lifecycle("delete", ["web-orders", "web-clicks", "nope"], user=user)

    assert [r.status for r in results] == [204, 204, 404]
    assert TOPIC not in ingest_kafka.topics
    assert "sluice.ingest.web-clicks" not in ingest_kafka.topics
    assert "sluice.ingest.web-kept" in ingest_kafka.topics
