"""MirrorMaker 2 migration over the API (in-memory runtime): preview, take over, hand back,
allow-lists with field paths, STOPPED only, audited. The real MM2 run is
tests/integration/test_mirrormaker2.py."""

from __future__ import annotations

import pytest

from console.models import LifecycleEvent
from runtime_adapter.base import (
    ConnectorOffsets,
    MirrorOffsetsTopic,
    OffsetChange,
    SourceOffset,
)
from tests.unit.console.test_api_offsets import CHANNELS, COPIED, create, item, stopped

pytestmark = pytest.mark.django_db

URL = f"{CHANNELS}orders/offsets/mirrormaker2"
WHERE = MirrorOffsetsTopic("a", "mm2-offsets.a.internal", "localhost:9092")


def mm2_item(topic: str, partition: int, offset: int, alias: str = "a") -> dict:
    return {
        "partition": {"cluster": alias, "topic": topic, "partition": partition},
        "offset": {"offset": offset},
    }


def reasons() -> list[str]:
    rows = LifecycleEvent.objects.filter(channel__name="orders", reason__startswith="offsets")
    return [e.reason for e in rows.order_by("id")]


def test_preview_shows_mm2s_form_the_takeover_and_the_channel(api, spec, runtime):
    stopped(api, spec, runtime)
    runtime.mirrors[WHERE] = [SourceOffset("orders", 0, 42), SourceOffset("orders", 1, 0)]
    runtime.checkpoints["orders"] = ConnectorOffsets([SourceOffset("orders", 0, 7)], batch_id=3)

    response = api.get(URL, {"source_alias": "a"})

    assert response.status_code == 200, response.content
    assert response.json() == {
        "source_alias": "a",
        "bootstrap_servers": "localhost:9092",
        "offsets_topic": "mm2-offsets.a.internal",
        "mirrormaker2": [mm2_item("orders", 0, 41), mm2_item("orders", 1, -1)],
        "takeover": [item("orders", 0, 42), item("orders", 1, 0)],
        "channel": [item("orders", 0, 7)],
    }
    assert runtime.calls_named("mirrormaker2_offsets") == [(WHERE,)]


def test_take_over_sets_the_next_offsets_and_is_audited(api, spec, runtime):
    stopped(api, spec, runtime)
    runtime.mirrors[WHERE] = [SourceOffset("orders", 0, 42)]

    response = api.post(
        f"{CHANNELS}orders/offsets/copy",
        {"from_mirrormaker2": {"source_alias": "a"}},
        format="json",
    )

    assert response.status_code == 200, response.content
    assert response.json() == COPIED
    assert runtime.offset_changes["orders"] == OffsetChange(
        "offsets", (SourceOffset("orders", 0, 42),)
    )
    assert reasons() == [
        "offsets copied from MirrorMaker 2 (mm2-offsets.a.internal on localhost:9092, alias a):"
        " orders/0 → 42"
    ]


def test_take_over_with_nothing_from_mm2_is_a_conflict(api, spec, runtime):
    stopped(api, spec, runtime)

    response = api.post(
        f"{CHANNELS}orders/offsets/copy",
        {"from_mirrormaker2": {"source_alias": "a"}},
        format="json",
    )

    assert response.status_code == 409
    assert "nothing to take over" in response.json()["detail"]
    assert runtime.calls_named("alter_offsets") == []


def test_hand_back_writes_mm2s_form_and_is_audited(api, spec, runtime, settings):
    settings.SLUICE_MM2_OFFSETS_TOPICS = ["custom-offsets"]  # an MM2 with its own topic name
    stopped(api, spec, runtime)
    runtime.checkpoints["orders"] = ConnectorOffsets(
        [SourceOffset("orders", 0, 90), SourceOffset("orders", 1, 0)], batch_id=9
    )
    where = MirrorOffsetsTopic("b-1", "custom-offsets", "localhost:9092")

    response = api.post(
        URL,
        {
            "source_alias": "b-1",
            "offsets_topic": "custom-offsets",
            "bootstrap_servers": "localhost:9092",
        },
        format="json",
    )

    assert response.status_code == 200, response.content
    assert response.json() == {
        "source_alias": "b-1",
        "bootstrap_servers": "localhost:9092",
        "offsets_topic": "custom-offsets",
        "message": "The offsets for this channel have been handed back to MirrorMaker 2 "
        "successfully",
        "created_topic": True,
        "offsets": [mm2_item("orders", 0, 89, "b-1"), mm2_item("orders", 1, -1, "b-1")],
    }
    # The runtime is given the channel's NEXT offsets; it writes MM2's form.
    assert runtime.mirrors[where] == [SourceOffset("orders", 0, 90), SourceOffset("orders", 1, 0)]
    assert reasons() == [
        "offsets handed back to MirrorMaker 2 (custom-offsets on localhost:9092, alias b-1; "
        "last copied offsets): orders/0 → 89, orders/1 → -1"
    ]


def test_hand_back_without_a_position_or_with_a_pending_reset_is_refused(api, spec, runtime):
    stopped(api, spec, runtime)
    assert api.post(URL, {"source_alias": "a"}, format="json").status_code == 409
    runtime.checkpoints["orders"] = ConnectorOffsets([SourceOffset("orders", 0, 5)], batch_id=1)
    runtime.offset_changes["orders"] = OffsetChange("timestamp", timestamp_ms=1)
    refused = api.post(URL, {"source_alias": "a"}, format="json")
    assert refused.status_code == 409
    assert "timestamp" in refused.json()["detail"]
    assert runtime.calls_named("write_mirrormaker2_offsets") == []


def test_changes_are_refused_unless_stopped(api, spec, runtime):
    create(api, spec)
    assert api.post(f"{CHANNELS}orders/start").status_code == 202
    for response in (
        api.post(URL, {"source_alias": "a"}, format="json"),
        api.post(
            f"{CHANNELS}orders/offsets/copy",
            {"from_mirrormaker2": {"source_alias": "a"}},
            format="json",
        ),
    ):
        assert response.status_code == 409, response.content
        assert "stop it before you" in response.json()["detail"]
    assert runtime.calls_named("write_mirrormaker2_offsets") == []


ALIAS_ERROR = "A cluster alias: 1-64 letters, digits, '_' or '-', starting with a letter or digit."


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        ({}, {"source_alias": ["Must be a non-empty string."]}),
        ([], {"non_field_errors": ["Must be a JSON object."]}),
        ({"source_alias": "a", "bootstrap": "x"}, {"bootstrap": ["Unknown field."]}),
        ({"source_alias": "a.b"}, {"source_alias": [ALIAS_ERROR]}),
        ({"source_alias": "../etc"}, {"source_alias": [ALIAS_ERROR]}),
        (
            {"source_alias": "a", "bootstrap_servers": "evil.example:9092"},
            {
                "bootstrap_servers": [
                    "Must be the brokers of the channel's Kafka source or sink: 'localhost:9092'."
                ]
            },
        ),
        (
            {"source_alias": "a", "offsets_topic": "__consumer_offsets"},
            {
                "offsets_topic": [
                    "A Kafka topic name (1-249 letters, digits, '.', '_' or '-'), not an "
                    "internal topic (__...)."
                ]
            },
        ),
        (
            {"source_alias": "a", "offsets_topic": "big-orders"},
            {
                "offsets_topic": [
                    "This is a topic the channel reads or writes, not MirrorMaker 2's offsets "
                    "topic."
                ]
            },
        ),
        (  # issue 29 (finding 5): any topic was taken, an unrelated compacted one written to
            {"source_alias": "a", "offsets_topic": "customers-compacted"},
            {
                "offsets_topic": [
                    "MirrorMaker 2's offsets topic is mm2-offsets.<source alias>.internal; "
                    "another name must be one the operator allowed (SLUICE_MM2_OFFSETS_TOPICS), "
                    "so no other topic is read or written as one."
                ]
            },
        ),
        (
            {"source_alias": "a", "offsets_topic": "a/b"},
            {
                "offsets_topic": [
                    "A Kafka topic name (1-249 letters, digits, '.', '_' or '-'), not an "
                    "internal topic (__...)."
                ]
            },
        ),
    ],
)
def test_hand_back_refuses_bad_input_with_field_paths(api, spec, runtime, body, errors):
    stopped(api, spec, runtime)
    runtime.checkpoints["orders"] = ConnectorOffsets([SourceOffset("orders", 0, 5)], batch_id=1)

    response = api.post(URL, body, format="json")

    assert response.status_code == 400, response.content
    assert response.json() == errors
    assert runtime.calls_named("write_mirrormaker2_offsets") == []


def test_take_over_errors_are_keyed_under_from_mirrormaker2(api, spec, runtime):
    stopped(api, spec, runtime)

    response = api.post(
        f"{CHANNELS}orders/offsets/copy",
        {"from_mirrormaker2": {"source_alias": "a.b", "extra": 1}},
        format="json",
    )
    assert response.status_code == 400
    assert set(response.json()) == {"from_mirrormaker2.extra"}  # shape first

    response = api.post(
        f"{CHANNELS}orders/offsets/copy",
        {"from_mirrormaker2": {"source_alias": "a.b", "offsets_topic": "orders"}},
        format="json",
    )
    assert response.status_code == 400
    assert set(response.json()) == {
        "from_mirrormaker2.source_alias",
        "from_mirrormaker2.offsets_topic",
    }
    assert runtime.calls_named("mirrormaker2_offsets") == []


def test_preview_needs_an_alias_and_a_kafka_source(api, spec, runtime, tmp_path):
    stopped(api, spec, runtime)
    assert api.get(URL).json() == {"source_alias": ["Must be a non-empty string."]}
