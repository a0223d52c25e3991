"""Replays over the API: validation (400 keyed by field paths), listing, cancelling,
auditing, and the dead-letter redrive's hand-off (``console.services.runs.start_redrive``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from console.models import AuditEvent, Channel, ChannelRun
from console.services import runs

pytestmark = pytest.mark.django_db

CHANNELS = "/api/v1/channels/"


def create(api, spec, name="orders"):
    response = api.post(CHANNELS, {"name": name, "spec": spec}, format="json")
    assert response.status_code == 201, response.content


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def window(start: datetime, end: datetime, confirm: bool = True) -> dict:
    """A replay request of ``[start, end)``, confirmed unless said otherwise."""
    return {"window": {"start": iso(start), "end": iso(end)}, "confirm": confirm}


NOW = datetime.now(UTC)


def test_a_replay_of_a_window_is_recorded_pending_and_audited(api, spec):
    create(api, spec)
    response = api.post(
        f"{CHANNELS}orders/replays/", window(NOW - timedelta(hours=1), NOW), format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["kind"] == "replay"
    assert body["state"] == "PENDING"
    assert body["progress"] == 0.0
    assert body["channel"] == "orders"
    assert body["created_by"] == "user:alice"
    run = ChannelRun.objects.get(id=body["id"])
    assert run.window_end > run.window_start
    audit = AuditEvent.objects.filter(action="channel.replay.start").get()
    assert audit.object_id == "orders" and audit.outcome == 201
    listed = api.get(f"{CHANNELS}orders/replays/").json()
    assert [r["id"] for r in listed["results"]] == [body["id"]]
    assert api.get(f"{CHANNELS}orders/replays/{body['id']}/").json()["id"] == body["id"]


def test_window_end_before_start_is_a_400_on_window_end(api, spec):
    create(api, spec)
    response = api.post(
        f"{CHANNELS}orders/replays/", window(NOW, NOW - timedelta(minutes=5)), format="json"
    )
    assert response.status_code == 400
    assert response.json() == {"window.end": ["Must be after window.start."]}
    assert not ChannelRun.objects.exists()


def test_a_window_in_the_future_is_a_400(api, spec):
    create(api, spec)
    response = api.post(
        f"{CHANNELS}orders/replays/",
        window(NOW - timedelta(minutes=5), NOW + timedelta(hours=1)),
        format="json",
    )
    assert response.status_code == 400
    assert list(response.json()) == ["window.end"]
    assert "future" in response.json()["window.end"][0]


def test_a_missing_window_field_is_keyed_by_its_path(api, spec):
    create(api, spec)
    response = api.post(
        f"{CHANNELS}orders/replays/",
        {"window": {"start": iso(NOW)}, "confirm": True},
        format="json",
    )
    assert response.status_code == 400
    assert list(response.json()) == ["window.end"]


def test_a_channel_without_a_kafka_or_ingest_source_is_a_400_on_source(api, tmp_path):
    create(
        api,
        {
            "source": {"type": "files", "config": {"path": str(tmp_path), "format": "jsonl"}},
            "transforms": [],
            "sink": {"type": "preview", "config": {}},
        },
        name="files",
    )
    response = api.post(
        f"{CHANNELS}files/replays/", window(NOW - timedelta(hours=1), NOW), format="json"
    )
    assert response.status_code == 400
    assert list(response.json()) == ["source"]


def test_an_http_channel_replays_its_ingest_topic(api):
    create(
        api,
        {
            "source": {"type": "http", "config": {}},
            "transforms": [],
            "sink": {"type": "preview", "config": {}},
        },
        name="hooks",
    )
    response = api.post(
        f"{CHANNELS}hooks/replays/", window(NOW - timedelta(hours=1), NOW), format="json"
    )
    assert response.status_code == 201, response.content


def test_offsets_name_topics_the_channel_reads(api, spec):
    create(api, spec)
    body = {
        "start_offsets": [{"topic": "other", "partition": 0, "offset": 0}],
        "end_offsets": [{"topic": "other", "partition": 0, "offset": 5}],
        "confirm": True,
    }
    response = api.post(f"{CHANNELS}orders/replays/", body, format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["start_offsets[0].topic"]


def test_explicit_offsets_give_the_expected_count(api, spec):
    create(api, spec)
    body = {
        "start_offsets": [
            {"topic": "orders", "partition": 0, "offset": 10},
            {"topic": "orders", "partition": 1, "offset": 0},
        ],
        "end_offsets": [
            {"topic": "orders", "partition": 0, "offset": 15},
            {"topic": "orders", "partition": 1, "offset": 3},
        ],
        "confirm": True,
    }
    response = api.post(f"{CHANNELS}orders/replays/", body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["expected"] == 8


def test_window_and_offsets_together_are_refused(api, spec):
    create(api, spec)
    body = {
        **window(NOW - timedelta(hours=1), NOW),
        "start_offsets": [{"topic": "orders", "partition": 0, "offset": 0}],
        "end_offsets": [{"topic": "orders", "partition": 0, "offset": 1}],
    }
    response = api.post(f"{CHANNELS}orders/replays/", body, format="json")
    assert response.status_code == 400
    assert "non_field_errors" in response.json()


def test_delete_cancels_an_unfinished_run_once_and_is_audited(api, spec):
    create(api, spec)
    run_id = api.post(
        f"{CHANNELS}orders/replays/", window(NOW - timedelta(hours=1), NOW), format="json"
    ).json()["id"]
    response = api.delete(f"{CHANNELS}orders/replays/{run_id}/")
    assert response.status_code == 200, response.content
    assert response.json()["state"] == "CANCELLED"
    assert response.json()["finished_at"]
    assert api.delete(f"{CHANNELS}orders/replays/{run_id}/").status_code == 409
    outcomes = list(
        AuditEvent.objects.filter(action="channel.replay.cancel").values_list("outcome", flat=True)
    )
    assert sorted(outcomes) == [200, 409]


def test_an_unknown_channel_or_run_is_a_404(api, spec):
    assert api.get(f"{CHANNELS}nope/replays/").status_code == 404
    create(api, spec)
    missing = "00000000-0000-0000-0000-000000000000"
    assert api.delete(f"{CHANNELS}orders/replays/{missing}/").status_code == 404


def test_a_viewer_cannot_start_a_replay(anon, spec, api):
    create(api, spec)
    response = anon.post(
        f"{CHANNELS}orders/replays/", window(NOW - timedelta(hours=1), NOW), format="json"
    )
    assert response.status_code in (401, 403)


def test_start_redrive_records_exactly_the_given_offsets(api, spec, user):
    create(api, spec)
    channel = Channel.objects.get(name="orders")
    topic = runs.redrive_topic(channel)
    assert topic == "sluice-redrive.orders"
    run = runs.start_redrive(
        channel,
        topic=topic,
        start_offsets={0: 4, 1: 0},
        end_offsets={0: 7, 1: 2},
        count=5,
        actor=user,
    )
    assert run.kind == "redrive" and run.state == "PENDING"
    assert run.start_offsets == {topic: {"0": 4, "1": 0}}
    assert run.end_offsets == {topic: {"0": 7, "1": 2}}
    assert run.expected == 5 and run.created_by == "user:alice"
    listed = api.get(f"{CHANNELS}orders/replays/").json()["results"]
    assert listed[0]["kind"] == "redrive" and listed[0]["topic"] == topic
    with pytest.raises(ValueError):
        runs.start_redrive(
            channel, topic=topic, start_offsets={0: 4}, end_offsets={0: 3}, count=0, actor=user
        )


def test_a_replay_into_live_targets_is_refused_unless_confirmed_naming_them(api, spec):
    create(api, spec)
    response = api.post(
        f"{CHANNELS}orders/replays/",
        window(NOW - timedelta(hours=1), NOW, confirm=False),
        format="json",
    )
    assert response.status_code == 400
    (message,) = response.json()["confirm"]
    assert "live targets" in message and "kafka topic big-orders" in message
    assert "confirm: true" in message
    assert not ChannelRun.objects.exists()

    confirmed = api.post(
        f"{CHANNELS}orders/replays/", window(NOW - timedelta(hours=1), NOW), format="json"
    )
    assert confirmed.status_code == 201, confirmed.content
    assert [t["name"] for t in confirmed.json()["targets"]] == ["kafka topic big-orders"]


def test_a_replay_into_the_live_tail_alone_needs_no_confirmation(api):
    create(
        api,
        {
            "source": {"type": "http", "config": {}},
            "transforms": [],
            "sink": {"type": "preview", "config": {}},
        },
        name="hooks",
    )
    body = window(NOW - timedelta(hours=1), NOW, confirm=False)
    assert api.post(f"{CHANNELS}hooks/replays/", body, format="json").status_code == 201


def test_targets_name_each_bus_rules_targets_and_how_they_mark_a_run(api):
    from tests.unit.console.test_api_buses import bus, http_sink, kafka_sink

    spec = bus(
        {
            "name": "eu",
            "pattern": {"data": {"region": ["eu"]}},
            "sinks": [kafka_sink("eu"), http_sink("PW-1")],
        }
    )
    create(api, spec, name="orders-bus")
    body = api.get(f"{CHANNELS}orders-bus/replays/targets").json()
    assert body["live"] == 2
    kafka, http = body["targets"]
    assert kafka["rule"] == "eu" and kafka["type"] == "kafka"
    assert kafka["name"] == f"rule eu: kafka {kafka['where']}"
    assert http["type"] == "http" and "PW-1" not in json.dumps(body)
    assert api.get(f"{CHANNELS}nope/replays/targets").status_code == 404


@pytest.mark.parametrize(
    ("sink", "where", "marked"),
    [
        ({"type": "kafka", "config": {"topic": "out"}}, "topic out", "record headers sluicereplay"),
        (
            {"type": "kafka", "config": {"topic": "out", "format": "cloudevents"}},
            "topic out",
            "CloudEvents extension attributes sluicereplay",
        ),
        (
            {"type": "kafka", "config": {"topic": "out", "format": "cloudevents-binary"}},
            "topic out",
            "record headers ce_sluicereplay and ce_sluicerun",
        ),
        (
            {"type": "http", "config": {"url": "https://h.example/x?key=SECRET", "body": "data"}},
            "POST https://h.example/x?…",
            "request headers sluicereplay",
        ),
        (
            {"type": "jdbc", "config": {"table": "orders", "content": "data"}},
            "table orders",
            "not marked: only the data is stored (rows are upserted by event id",
        ),
        ({"type": "jdbc", "config": {"table": "orders"}}, "table orders", "members sluicereplay"),
        ({"type": "files", "config": {"path": "/data/out"}}, "/data/out", "not marked"),
    ],
)
def test_each_sink_says_how_it_marks_a_runs_events(sink, where, marked):
    target = runs.target_of(sink)
    assert target.where == where and target.live
    assert target.marked.startswith(marked)
