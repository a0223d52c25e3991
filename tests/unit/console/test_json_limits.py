"""Depth and size limits on every JSON body, and on channel specs (issue 12, finding 8).

The issue: "JSON nested ~1,000 levels deep gives a 500 on POST /api/v1/channels/, the pattern
test and ingestion; no size limits on specs (10,000 transforms took 2.5 s to save),
descriptions (1 MB) or patterns (560 KB) ...; duplicate JSON keys silently take the last."
Now: 400 naming the path, 413 for a body over the limit, field errors for a spec over its
limits; never a 500.
"""

from __future__ import annotations

import json
import re
import time

import pytest
import redis

from console import services
from console.api.parsers import StrictJSONError, loads_strict
from console.models import Channel
from console.runtime import set_runtime
from console.services.ingest.tokens import issue_ingest_token
from pipelines.spec.channel import MAX_SPEC_BYTES, MAX_STAGE_CONFIG_BYTES, MAX_TRANSFORMS, SpecError
from pipelines.spec.validation import validate_spec

pytestmark = pytest.mark.django_db

CHANNELS = "/api/v1/channels/"
PATTERN_TEST = "/api/v1/event-patterns/test"
EVENTS = "/api/v1/channels/hooks/events"
DEEP = 1000


def nested_arrays(depth: int) -> str:
    return "[" * depth + "]" * depth


def nested_objects(depth: int, key: str = "a") -> str:
    return f'{{"{key}": ' * depth + "1" + "}" * depth


def http_spec() -> dict:
    return {
        "source": {"type": "http", "config": {}},
        "transforms": [],
        "sink": {"type": "preview", "config": {}},
    }


@pytest.fixture
def hooks(user):
    """A channel with an http source, and an ingestion token's headers."""
    channel = services.create_channel(name="hooks", spec=http_spec(), user=user)
    return {"HTTP_AUTHORIZATION": f"Bearer {issue_ingest_token(channel).token}"}


def post_raw(client, path: str, body: str | bytes, content_type="application/json", **extra):
    return client.post(path, body, content_type=content_type, **extra)


def assert_400_naming(response, *fragments: str) -> str:
    assert response.status_code == 400, response.content
    detail = response.json()["detail"]
    for fragment in fragments:
        assert fragment in detail, detail
    return detail


# -- the issue's attack: ~1,000 levels deep ----------------------------------------------------


def test_a_deep_spec_is_a_400_naming_where(api):
    body = '{"name": "deep", "spec": ' + nested_arrays(DEEP) + "}"

    response = post_raw(api, CHANNELS, body)

    assert_400_naming(response, "nest deeper than 64 levels", "(at spec[0][0]")
    assert not Channel.objects.exists()


def test_a_deep_pattern_test_is_a_400_naming_where(api):
    body = '{"pattern": ' + nested_objects(DEEP) + ', "event": {}}'

    response = post_raw(api, PATTERN_TEST, body)

    detail = assert_400_naming(response, "nest deeper than 64 levels", "(at pattern.a.a.a")
    # The path stops where the limit is crossed: pattern and 63 levels of "a".
    assert "pattern" + ".a" * 63 + ")" in detail


@pytest.mark.parametrize(
    ("content_type", "body", "where"),
    [
        ("application/json", '{"order": ' + nested_arrays(DEEP) + "}", "(at order[0][0]"),
        (
            "application/cloudevents+json",
            '{"specversion": "1.0", "id": "1", "source": "/s", "type": "t", "data": '
            + nested_objects(DEEP, "x")
            + "}",
            "(at data.x.x",
        ),
        ("application/cloudevents-batch+json", nested_arrays(DEEP), "(at [0][0]"),
    ],
)
def test_deep_events_are_a_400_naming_where(anon, hooks, content_type, body, where):
    response = post_raw(anon, EVENTS, body, content_type=content_type, **hooks)

    assert_400_naming(response, "nest deeper than 64 levels", where)


def test_a_deep_binary_mode_event_is_a_400(anon, hooks):
    response = anon.generic(
        "POST",
        EVENTS,
        nested_arrays(DEEP),
        content_type="application/json",
        HTTP_CE_SPECVERSION="1.0",
        HTTP_CE_ID="1",
        HTTP_CE_SOURCE="/s",
        HTTP_CE_TYPE="t",
        **hooks,
    )

    assert_400_naming(response, "nest deeper than 64 levels")


def test_config_validation_refuses_the_deep_body_in_its_own_shape(api):
    response = post_raw(api, "/api/v1/plugins/source/kafka/validate", nested_arrays(DEEP))

    assert response.status_code == 400
    assert response.json()["valid"] is False
    assert "nest deeper than 64 levels" in response.json()["errors"]["body"][0]


def test_nesting_within_the_limit_is_accepted(api):
    # 62 levels of objects under "a", inside the event, inside the body: 64 in all.
    event = {"b": "x", "a": json.loads(nested_objects(63))["a"]}
    assert '{"a": ' * 62 in json.dumps(event) and '{"a": ' * 63 not in json.dumps(event)

    response = api.post(PATTERN_TEST, {"pattern": {"b": ["x"]}, "event": event}, format="json")

    assert response.status_code == 200, response.content
    assert response.json() == {"result": True}


def test_an_ingested_event_within_the_limit_is_accepted(anon, hooks, settings, redis_url, runtime):
    settings.REDIS_URL = redis_url  # the channel's rate limit lives in Redis
    set_runtime(runtime)
    for key in redis.Redis.from_url(redis_url).scan_iter("*:ingest:rate:*"):
        redis.Redis.from_url(redis_url).delete(key)

    response = post_raw(anon, EVENTS, nested_objects(63), **hooks)

    assert response.status_code == 202, response.content


# -- duplicate keys ----------------------------------------------------------------------------


def test_a_repeated_top_level_key_is_a_400_naming_it(api, spec):
    body = '{"name": "orders", "name": "payments", "spec": ' + json.dumps(spec) + "}"

    response = post_raw(api, CHANNELS, body)

    assert_400_naming(response, "duplicate key 'name'", "(at name)")
    assert not Channel.objects.exists()


def test_a_repeated_key_deep_in_a_spec_is_a_400_naming_its_path(api):
    body = (
        '{"name": "orders", "spec": {"source": {"type": "kafka", "config": '
        '{"bootstrap_servers": "localhost:9092", "topics": ["a"], "topics": ["b"]}}, '
        '"transforms": [], "sink": {"type": "preview", "config": {}}}}'
    )

    response = post_raw(api, CHANNELS, body)

    assert_400_naming(response, "duplicate key 'topics'", "(at spec.source.config.topics)")


def test_a_repeated_key_in_a_pattern_is_a_400(api):
    body = '{"pattern": {"source": ["a"], "source": ["b"]}, "event": {"source": "b"}}'

    response = post_raw(api, PATTERN_TEST, body)

    assert_400_naming(response, "duplicate key 'source'", "(at pattern.source)")


def test_a_repeated_key_in_an_event_is_a_400(anon, hooks):
    body = '[{"total": 1}, {"total": 2, "total": 3}]'

    response = post_raw(anon, EVENTS, body, **hooks)

    assert_400_naming(response, "duplicate key 'total'", "(at [1].total)")


# -- body size -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [CHANNELS, PATTERN_TEST, "/api/v1/plugins/filter/validate"])
def test_a_3_mb_body_is_a_413_in_json(api, spec, path):
    body = json.dumps({"name": "big", "description": "x" * 3_000_000, "spec": spec})

    response = post_raw(api, path, body)

    assert response.status_code == 413, response.content[:200]
    assert response.json() == {"detail": "The body is over the limit of 1048576 bytes."}


def test_a_3_mb_event_batch_is_a_413(anon, hooks):
    response = post_raw(anon, EVENTS, json.dumps([{"x": "y" * 3_000_000}]), **hooks)

    assert response.status_code == 413
    assert "limit" in response.json()["detail"]


# -- spec size limits --------------------------------------------------------------------------


def filter_stage(n: int = 0) -> dict:
    return {"type": "filter", "config": {"pattern": {"data": {"n": [n]}}}}


def test_ten_thousand_transforms_are_refused_quickly_at_transforms(api, spec):
    spec["transforms"] = [{"type": "filter", "config": {}}] * 10_000

    # CPU time, not wall time: the request runs in this process, and a loaded machine (CI,
    # a shared host) stretches the wall clock, not the work done.
    started = time.process_time()
    response = api.post(CHANNELS, {"name": "orders", "spec": spec}, format="json")
    elapsed = time.process_time() - started

    assert response.status_code == 400
    errors = response.json()
    assert errors["spec.transforms"] == [f"has 10000 transforms; the limit is {MAX_TRANSFORMS}"]
    assert set(errors) <= {"spec", "spec.transforms"}  # the size too, if over; nothing else
    # Refused before each transform is validated; 2 s as contention stretches CPU time too.
    assert elapsed < 2.0
    assert not Channel.objects.exists()


def test_fifty_transforms_are_fine_and_fifty_one_are_not(api, spec):
    spec["transforms"] = [filter_stage(n) for n in range(MAX_TRANSFORMS)]
    assert api.post(CHANNELS, {"name": "fifty", "spec": spec}, format="json").status_code == 201

    spec["transforms"].append(filter_stage())
    response = api.post(CHANNELS, {"name": "fifty-one", "spec": spec}, format="json")
    assert response.status_code == 400
    assert "spec.transforms" in response.json()


def test_a_1_mb_description_is_refused(api, spec):
    response = api.post(
        CHANNELS, {"name": "orders", "description": "d" * 1_000_000, "spec": spec}, format="json"
    )

    assert response.status_code == 400
    assert response.json()["description"] == ["Ensure this field has no more than 2000 characters."]
    assert not Channel.objects.exists()


def test_a_560_kb_pattern_is_refused_with_the_spec_limit(api, spec):
    values = [f"v{n:07d}" for n in range(560 * 1024 // 11)]
    spec["transforms"] = [{"type": "filter", "config": {"pattern": {"data": {"id": values}}}}]

    response = api.post(CHANNELS, {"name": "orders", "spec": spec}, format="json")

    assert response.status_code == 400
    errors = response.json()
    assert list(errors) == ["spec"]  # over the whole spec's limit: stages are not looked at
    assert f"the limit is {MAX_SPEC_BYTES}" in errors["spec"][0]


def test_a_stage_config_over_its_limit_is_a_field_error(spec):
    spec["source"]["config"]["topics"] = [f"t{n:06d}" for n in range(MAX_STAGE_CONFIG_BYTES // 9)]

    with pytest.raises(SpecError) as caught:
        validate_spec(spec)

    assert list(caught.value.errors) == ["source.config"]
    assert f"the limit is {MAX_STAGE_CONFIG_BYTES}" in caught.value.errors["source.config"][0]


def test_a_long_stage_type_is_a_field_error(spec):
    spec["sink"]["type"] = "x" * 10_000

    with pytest.raises(SpecError) as caught:
        validate_spec(spec)

    assert caught.value.errors == {"sink.type": ["string should have at most 64 characters"]}


def test_the_limits_are_in_the_spec_json_schema():
    from pipelines.spec.channel import ChannelSpec

    schema = ChannelSpec.model_json_schema()

    assert schema["properties"]["transforms"]["maxItems"] == MAX_TRANSFORMS


# -- the parser itself -------------------------------------------------------------------------


def test_brackets_inside_strings_do_not_count():
    text = json.dumps({"sql": "[" * 5000 + "{" * 5000, "escaped": '\\"[[[['})

    assert loads_strict(text)["sql"].startswith("[[[")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": NaN}', "JSON parse error"),
        ('{"a": "x\\u0000"}', "NUL"),
        ('{"a": 1,}', "JSON parse error"),
        ('{"k": {"b": 1, "b": 1}}', "duplicate key 'b' (at k.b)"),
        (nested_arrays(65), "(at [0][0]"),
    ],
)
def test_loads_strict_refuses_with_a_reason(text, message):
    with pytest.raises(StrictJSONError, match=re.escape(message)):
        loads_strict(text)


def test_loads_strict_takes_64_levels(settings):
    assert loads_strict(nested_arrays(64)) == json.loads(nested_arrays(64))
    with pytest.raises(StrictJSONError):
        loads_strict(nested_arrays(3), max_depth=2)
