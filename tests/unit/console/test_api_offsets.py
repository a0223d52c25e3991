"""Offsets over the API (KIP-875): read, alter, reset and copy (migration), STOPPED only."""

from __future__ import annotations

import copy

import pytest

from console.choices import ConnectorState, SubjectType
from console.models import Channel, Connector, LifecycleEvent
from runtime_adapter.base import ConnectorOffsets, OffsetChange, OffsetsError, SourceOffset

pytestmark = pytest.mark.django_db

CHANNELS = "/api/v1/channels/"
ALTERED = {"message": "The offsets for this channel have been altered successfully"}
RESET = {"message": "The offsets for this channel have been reset successfully"}
COPIED = {"message": "The offsets for this channel have been copied successfully"}


def create(api, spec, name="orders"):
    response = api.post(CHANNELS, {"name": name, "spec": spec}, format="json")
    assert response.status_code == 201, response.content
    return response


def stopped(api, spec, runtime, name="orders", state=ConnectorState.STOPPED) -> Connector:
    """A channel that ran and was stopped; its connector observed in ``state``."""
    create(api, spec, name=name)
    assert api.post(f"{CHANNELS}{name}/start").status_code == 202
    assert api.post(f"{CHANNELS}{name}/stop").status_code == 202
    Connector.objects.filter(runtime_id=name).update(state=state)
    runtime.calls.clear()
    return Connector.objects.get(runtime_id=name)


def item(topic: str, partition: int, offset: int) -> dict:
    return {"partition": {"topic": topic, "partition": partition}, "offset": {"offset": offset}}


def offsets_events(name="orders") -> list[tuple[str, str, str, str]]:
    rows = LifecycleEvent.objects.filter(channel__name=name, reason__startswith="offsets")
    return [(e.subject_type, e.to_state, e.actor, e.reason) for e in rows.order_by("id")]


def files_spec(tmp_path) -> dict:
    return {
        "source": {"type": "files", "config": {"path": str(tmp_path), "format": "jsonl"}},
        "transforms": [],
        "sink": {"type": "preview", "config": {}},
    }


# -- GET -----------------------------------------------------------------------------------------


def test_get_answers_the_checkpoint_offsets_in_kip_875_shape(api, spec, runtime):
    stopped(api, spec, runtime)
    runtime.checkpoints["orders"] = ConnectorOffsets(
        [SourceOffset("orders", 0, 42), SourceOffset("orders", 1, 17)], batch_id=7
    )

    response = api.get(f"{CHANNELS}orders/offsets")

    assert response.status_code == 200
    assert response.json() == {
        "offsets": [item("orders", 0, 42), item("orders", 1, 17)],
        "note": "",
    }
    key = Channel.objects.get(name="orders").checkpoint_key  # the checkpoint's folder
    assert runtime.calls_named("offsets") == [("orders", key)]


def test_get_of_a_never_started_channel_says_it_starts_from_starting_offsets(api, spec):
    create(api, spec)

    body = api.get(f"{CHANNELS}orders/offsets").json()

    assert body["offsets"] == []
    assert "starting_offsets" in body["note"]


def test_get_of_a_files_source_is_an_empty_list_with_a_note(api, runtime, tmp_path):
    create(api, files_spec(tmp_path))

    body = api.get(f"{CHANNELS}orders/offsets").json()

    assert body["offsets"] == []
    assert "files source" in body["note"]
    assert runtime.calls_named("offsets") == []


def test_get_of_an_unknown_channel_is_404(api):
    assert api.get(f"{CHANNELS}nope/offsets").status_code == 404


def test_get_answers_503_when_the_runtime_is_down(api, spec, runtime):
    create(api, spec)
    runtime.unavailable = ConnectionError("redis down")

    assert api.get(f"{CHANNELS}orders/offsets").status_code == 503


def test_get_while_running_is_allowed(api, spec, runtime):
    create(api, spec)
    api.post(f"{CHANNELS}orders/start")

    assert api.get(f"{CHANNELS}orders/offsets").status_code == 200


def test_reading_needs_authentication(anon, api, spec):
    create(api, spec)

    assert anon.get(f"{CHANNELS}orders/offsets").status_code in (401, 403)
    assert anon.patch(f"{CHANNELS}orders/offsets", {}, format="json").status_code in (401, 403)


# -- PATCH -----------------------------------------------------------------------------------------


def test_patch_with_explicit_offsets_records_the_change_and_answers_like_connect(
    api, spec, runtime
):
    stopped(api, spec, runtime)
    runtime.checkpoints["orders"] = ConnectorOffsets(
        [SourceOffset("orders", 0, 100), SourceOffset("orders", 1, 50)], batch_id=3
    )

    response = api.patch(
        f"{CHANNELS}orders/offsets", {"offsets": [item("orders", 0, 40)]}, format="json"
    )

    assert response.status_code == 200, response.content
    assert response.json() == ALTERED
    assert runtime.calls_named("alter_offsets") == [
        ("orders", OffsetChange("offsets", (SourceOffset("orders", 0, 40),)))
    ]
    assert offsets_events() == [
        (SubjectType.CHANNEL, "STOPPED", "user:alice", "offsets altered: orders/0 → 40")
    ]
    body = api.get(f"{CHANNELS}orders/offsets").json()
    assert body["offsets"] == [item("orders", 0, 40), item("orders", 1, 50)]
    assert body["note"].startswith("pending")


def test_patch_accepts_kafka_connect_sink_spelling(api, spec, runtime):
    stopped(api, spec, runtime)
    body = {
        "offsets": [
            {
                "partition": {"kafka_topic": "orders", "kafka_partition": 2},
                "offset": {"kafka_offset": 9},
            }
        ]
    }

    assert api.patch(f"{CHANNELS}orders/offsets", body, format="json").status_code == 200
    assert runtime.offset_changes["orders"].offsets == (SourceOffset("orders", 2, 9),)


@pytest.mark.parametrize(
    ("timestamp", "millis"),
    [("2026-11-01T00:00:00Z", 1793491200000), (1793491200000, 1793491200000)],
)
def test_patch_with_a_timestamp(api, spec, runtime, timestamp, millis):
    stopped(api, spec, runtime)

    response = api.patch(f"{CHANNELS}orders/offsets", {"timestamp": timestamp}, format="json")

    assert response.status_code == 200, response.content
    assert runtime.offset_changes["orders"] == OffsetChange("timestamp", timestamp_ms=millis)
    assert offsets_events()[-1][3] == (
        "offsets set to the first records at or after 2026-11-01T00:00:00.000Z"
    )
    note = api.get(f"{CHANNELS}orders/offsets").json()["note"]
    assert "2026-11-01T00:00:00.000Z" in note


def test_patch_of_a_never_started_channel_is_allowed(api, spec, runtime):
    create(api, spec)

    response = api.patch(
        f"{CHANNELS}orders/offsets", {"offsets": [item("orders", 0, 5)]}, format="json"
    )

    assert response.status_code == 200
    assert runtime.calls_named("alter_offsets")[0][0] == "orders"


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        ([], {"non_field_errors": ["Must be a JSON object."]}),
        (
            {},
            {
                "non_field_errors": [
                    "Give exactly one of offsets (a list) and timestamp (epoch ms or RFC 3339)."
                ]
            },
        ),
        (
            {"offsets": [], "timestamp": 1},
            {
                "non_field_errors": [
                    "Give exactly one of offsets (a list) and timestamp (epoch ms or RFC 3339)."
                ]
            },
        ),
        ({"offsets": []}, {"offsets": ["Must be a non-empty list."]}),
        (
            {"offsets": [item("orders", 0, 1)], "extra": 1},
            {"extra": ["Unknown field: give offsets or timestamp."]},
        ),
        (
            {"offsets": [item("orders", 0, -1)]},
            {
                "offsets[0].offset.offset": [
                    "Required: the next offset to read (0 or more); DELETE resets to "
                    "starting_offsets."
                ]
            },
        ),
        (
            {"offsets": [item("orders", 0, 1), item("payments", 1, 1)]},
            {"offsets[1].partition.topic": ["The channel does not read topic 'payments'."]},
        ),
        (
            {
                "offsets": [
                    {"partition": {"topic": "orders", "partition": True}, "offset": {"offset": 1}}
                ]
            },
            {"offsets[0].partition.partition": ["Required: a partition number (0 or more)."]},
        ),
        (
            {"offsets": [{"offset": {"offset": 1}}]},
            {"offsets[0].partition": ['Required: an object {"topic": ..., "partition": ...}.']},
        ),
        (
            {"offsets": [item("orders", 0, 1), item("orders", 0, 2)]},
            {"offsets[1].partition": ["Partition orders/0 is named twice."]},
        ),
        ({"offsets": ["x"]}, {"offsets[0]": ["Must be an object with partition and offset."]}),
        ({"offsets": [None]}, {"offsets[0]": ["Must be an object with partition and offset."]}),
        ({"offsets": None}, {"offsets": ["Must be a non-empty list."]}),
        ({"offsets": {"a": 1}}, {"offsets": ["Must be a non-empty list."]}),
        (
            {"offsets": [{"partition": {"topic": 5, "partition": 0}, "offset": {"offset": 1}}]},
            {"offsets[0].partition.topic": ["Required: a topic name."]},
        ),
        (
            {"offsets": [{"partition": {"topic": "orders", "partition": "0"}, "offset": {}}]},
            {
                "offsets[0].partition.partition": ["Required: a partition number (0 or more)."],
                "offsets[0].offset.offset": [
                    "Required: the next offset to read (0 or more); DELETE resets to "
                    "starting_offsets."
                ],
            },
        ),
        (
            {"offsets": [{"partition": {"topic": "orders", "partition": 0}, "offset": 3}]},
            {"offsets[0].offset": ['Required: an object {"offset": ...}.']},
        ),
        (
            {"offsets": [{**item("orders", 0, 1), "extra": 1}]},
            {"offsets[0].extra": ["Unknown field."]},
        ),
        (
            {"timestamp": ""},
            {"timestamp": ["'' is not an RFC 3339 timestamp"]},
        ),
        ({"timestamp": "yesterday"}, {"timestamp": ["'yesterday' is not an RFC 3339 timestamp"]}),
        (
            {"timestamp": "2026-11-01T00:00:00"},
            {"timestamp": ["'2026-11-01T00:00:00' has no time zone (add Z or +hh:mm)"]},
        ),
        ({"timestamp": True}, {"timestamp": ["Must be epoch milliseconds or RFC 3339 text."]}),
        (
            {"timestamp": -5},
            {"timestamp": ["a timestamp in epoch milliseconds must not be negative"]},
        ),
    ],
)
def test_patch_refuses_bad_requests_with_field_paths(api, spec, runtime, body, errors):
    stopped(api, spec, runtime)

    response = api.patch(f"{CHANNELS}orders/offsets", body, format="json")

    assert response.status_code == 400
    assert response.json() == errors
    assert runtime.calls_named("alter_offsets") == []
    assert offsets_events() == []


@pytest.mark.parametrize("method", ["patch", "delete", "copy"])
def test_changes_are_refused_with_409_unless_stopped(api, spec, runtime, method):
    create(api, spec)
    api.post(f"{CHANNELS}orders/start")
    runtime.calls.clear()

    response = change(api, method)

    assert response.status_code == 409
    assert response.json() == {
        "detail": f"channel 'orders' is RUNNING: stop it before you {DOING[method]} "
        "(offsets can change only while it is STOPPED)"
    }
    assert runtime.calls_named("alter_offsets") == []
    assert offsets_events() == []


@pytest.mark.parametrize("method", ["patch", "delete", "copy"])
def test_changes_wait_until_the_connector_is_stopped(api, spec, runtime, method):
    stopped(api, spec, runtime, state=ConnectorState.RUNNING)

    response = change(api, method)

    assert response.status_code == 409
    assert "is stopping (its connector is still RUNNING)" in response.json()["detail"]
    assert runtime.calls_named("alter_offsets") == []


@pytest.mark.parametrize("method", ["patch", "delete", "copy"])
def test_changes_are_allowed_for_an_unassigned_connector(api, spec, runtime, method):
    stopped(api, spec, runtime, state=ConnectorState.UNASSIGNED)
    runtime.groups["g"] = [SourceOffset("orders", 0, 1)]

    assert change(api, method).status_code == 200


def test_paused_channel_is_refused(api, spec, runtime):
    create(api, spec)
    api.post(f"{CHANNELS}orders/start")
    api.post(f"{CHANNELS}orders/pause")

    response = change(api, "patch")

    assert response.status_code == 409
    assert "PAUSED" in response.json()["detail"]


def test_a_files_source_has_no_offsets_to_change(api, runtime, tmp_path):
    create(api, files_spec(tmp_path))

    response = change(api, "delete")

    assert response.status_code == 400
    assert "files source, which has no offsets to move" in response.json()["detail"]


def test_a_runtime_refusal_is_409_and_changes_nothing(api, spec, runtime):
    stopped(api, spec, runtime)

    def refuse(*args):
        raise OffsetsError("the source uses TLS")

    runtime.consumer_group_offsets = refuse

    response = change(api, "copy")

    assert response.status_code == 409
    assert response.json() == {"detail": "the source uses TLS"}


def test_patch_answers_503_and_records_nothing_when_the_runtime_is_down(api, spec, runtime):
    stopped(api, spec, runtime)
    runtime.unavailable = ConnectionError("redis down")

    assert change(api, "patch").status_code == 503
    assert offsets_events() == []


# -- DELETE ----------------------------------------------------------------------------------------


def test_delete_resets_to_the_starting_offsets(api, spec, runtime):
    stopped(api, spec, runtime)
    runtime.checkpoints["orders"] = ConnectorOffsets([SourceOffset("orders", 0, 100)], batch_id=3)

    response = api.delete(f"{CHANNELS}orders/offsets")

    assert response.status_code == 200
    assert response.json() == RESET
    assert runtime.offset_changes["orders"] == OffsetChange("reset")
    assert offsets_events() == [
        (
            SubjectType.CHANNEL,
            "STOPPED",
            "user:alice",
            "offsets reset: the next start begins from starting_offsets latest",
        )
    ]
    body = api.get(f"{CHANNELS}orders/offsets").json()
    assert body == {
        "offsets": [],
        "note": "offsets reset: the next start begins from the source's starting_offsets",
    }


# -- copy (migration) ------------------------------------------------------------------------------


def test_copy_from_a_consumer_group_keeps_the_topics_the_channel_reads(api, spec, runtime):
    create(api, spec)
    runtime.groups["connect-my-sink"] = [
        SourceOffset("orders", 0, 7),
        SourceOffset("orders", 1, 9),
        SourceOffset("payments", 0, 3),
    ]

    response = api.post(
        f"{CHANNELS}orders/offsets/copy", {"from_consumer_group": "connect-my-sink"}, format="json"
    )

    assert response.status_code == 200, response.content
    assert response.json() == COPIED
    assert runtime.offset_changes["orders"] == OffsetChange(
        "offsets", (SourceOffset("orders", 0, 7), SourceOffset("orders", 1, 9))
    )
    assert offsets_events() == [
        (
            SubjectType.CHANNEL,
            "STOPPED",
            "user:alice",
            "offsets copied from consumer group 'connect-my-sink': orders/0 → 7, orders/1 → 9",
        )
    ]


def test_copy_from_another_channel(api, spec, runtime):
    create(api, spec, name="old")
    create(api, spec, name="new")
    runtime.checkpoints["old"] = ConnectorOffsets([SourceOffset("orders", 0, 60)], batch_id=9)

    response = api.post(f"{CHANNELS}new/offsets/copy", {"from_channel": "old"}, format="json")

    assert response.status_code == 200
    assert runtime.offset_changes["new"] == OffsetChange(
        "offsets", (SourceOffset("orders", 0, 60),)
    )
    assert offsets_events("new")[0][3] == "offsets copied from channel 'old': orders/0 → 60"
    assert api.get(f"{CHANNELS}new/offsets").json()["offsets"] == [item("orders", 0, 60)]


def test_copy_with_nothing_to_copy_is_409(api, spec, runtime):
    create(api, spec)

    response = api.post(
        f"{CHANNELS}orders/offsets/copy", {"from_consumer_group": "empty"}, format="json"
    )

    assert response.status_code == 409
    assert response.json() == {
        "detail": "consumer group 'empty' has no committed offsets for the topics channel "
        "'orders' reads: there is nothing to copy"
    }
    assert offsets_events() == []


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        (
            {},
            {
                "non_field_errors": [
                    "Give exactly one of from_channel, from_consumer_group and from_mirrormaker2."
                ]
            },
        ),
        (
            {"from_channel": "a", "from_consumer_group": "b"},
            {
                "non_field_errors": [
                    "Give exactly one of from_channel, from_consumer_group and from_mirrormaker2."
                ]
            },
        ),
        ({"from_consumer_group": ""}, {"from_consumer_group": ["Must be a non-empty string."]}),
        ({"from_channel": 3}, {"from_channel": ["Must be a non-empty string."]}),
        ({"from_channel": "  "}, {"from_channel": ["Must be a non-empty string."]}),
        ({"from_channel": None}, {"from_channel": ["Must be a non-empty string."]}),
        ([], {"non_field_errors": ["Must be a JSON object."]}),
        ({"from_channel": "ghost"}, {"from_channel": ["No channel is named 'ghost'."]}),
        ({"from_channel": "orders"}, {"from_channel": ["Name another channel than this one."]}),
        (
            {"from_group": "x"},
            {
                "from_group": [
                    "Unknown field: give from_channel, from_consumer_group or from_mirrormaker2."
                ],
                "non_field_errors": [
                    "Give exactly one of from_channel, from_consumer_group and from_mirrormaker2."
                ],
            },
        ),
    ],
)
def test_copy_refuses_bad_requests_with_field_paths(api, spec, runtime, body, errors):
    create(api, spec)

    response = api.post(f"{CHANNELS}orders/offsets/copy", body, format="json")

    assert response.status_code == 400
    assert response.json() == errors
    assert runtime.calls_named("alter_offsets") == []


# -- http sources ----------------------------------------------------------------------------------


def http_spec() -> dict:
    return {
        "source": {"type": "http", "config": {}},
        "transforms": [],
        "sink": {"type": "preview", "config": {}},
    }


def test_an_http_source_reads_its_ingest_topic(api, runtime):
    create(api, http_spec())
    topic = "sluice.ingest.orders"
    runtime.checkpoints["orders"] = ConnectorOffsets([SourceOffset(topic, 0, 4)], batch_id=0)

    assert api.get(f"{CHANNELS}orders/offsets").json()["offsets"] == [item(topic, 0, 4)]
    response = api.patch(
        f"{CHANNELS}orders/offsets", {"offsets": [item(topic, 0, 1)]}, format="json"
    )
    assert response.status_code == 200
    other = api.patch(f"{CHANNELS}orders/offsets", {"offsets": [item("x", 0, 1)]}, format="json")
    assert other.status_code == 400


def test_an_http_source_must_have_run_once(api, runtime):
    create(api, http_spec())

    response = api.patch(f"{CHANNELS}orders/offsets", {"timestamp": 0}, format="json")

    assert response.status_code == 409
    assert "only after it ran once" in response.json()["detail"]


def test_a_topic_pattern_source_accepts_matching_topics(api, spec, runtime):
    pattern_spec = copy.deepcopy(spec)
    config = pattern_spec["source"]["config"]
    del config["topics"]
    config["topic_pattern"] = "orders-.*"
    create(api, pattern_spec)

    ok = api.patch(
        f"{CHANNELS}orders/offsets", {"offsets": [item("orders-eu", 0, 1)]}, format="json"
    )
    bad = api.patch(f"{CHANNELS}orders/offsets", {"offsets": [item("orders", 0, 1)]}, format="json")

    assert ok.status_code == 200
    assert bad.status_code == 400


# -- helpers ---------------------------------------------------------------------------------------

DOING = {"patch": "alter its offsets", "delete": "reset its offsets", "copy": "copy offsets to it"}


def change(api, method: str, name: str = "orders"):
    url = f"{CHANNELS}{name}/offsets"
    if method == "patch":
        return api.patch(url, {"offsets": [item("orders", 0, 1)]}, format="json")
    if method == "delete":
        return api.delete(url)
    return api.post(f"{url}/copy", {"from_consumer_group": "g"}, format="json")


def test_a_form_body_is_read_by_its_last_values(api, spec, runtime):
    stopped(api, spec, runtime)

    response = api.patch(
        f"{CHANNELS}orders/offsets",
        "offsets=a&offsets=b",
        content_type="application/x-www-form-urlencoded",
    )

    assert response.status_code == 400
    assert response.json() == {"offsets": ["Must be a non-empty list."]}
