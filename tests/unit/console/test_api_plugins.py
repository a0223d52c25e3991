from __future__ import annotations

import pytest

from console.models import Channel, LifecycleEvent
from pipelines.spec import PLUGINS
from pipelines.spec.configs import (
    FilterConfig,
    HttpSourceConfig,
    KafkaSinkConfig,
    KafkaSourceConfig,
)

pytestmark = pytest.mark.django_db

PLUGINS_URL = "/api/v1/plugins/"
SOURCE_CONFIG = {"bootstrap_servers": "localhost:9092", "topics": ["orders"]}


def validate(api, url, body, **query):
    return api.post(url + (f"?kind={query['kind']}" if query else ""), body, format="json")


# -- catalogue ---------------------------------------------------------------------------


def test_the_catalogue_lists_every_plugin_with_its_config_schema(api):
    response = api.get(PLUGINS_URL)

    assert response.status_code == 200
    body = response.json()
    assert body["count"] == len(PLUGINS)
    items = body["results"]
    assert [(item["kind"], item["type"]) for item in items] == list(PLUGINS)
    assert {
        ("source", "kafka"),
        ("source", "http"),
        ("transform", "filter"),
        ("sink", "kafka"),
    } <= {(item["kind"], item["type"]) for item in items}
    assert all(
        set(item) == {"type", "kind", "title", "description", "config_schema"} for item in items
    )
    schemas = {(item["kind"], item["type"]): item["config_schema"] for item in items}
    assert schemas[("source", "kafka")] == KafkaSourceConfig.model_json_schema()
    assert schemas[("source", "http")] == HttpSourceConfig.model_json_schema()
    assert schemas[("transform", "filter")] == FilterConfig.model_json_schema()
    assert schemas[("sink", "kafka")] == KafkaSinkConfig.model_json_schema()
    assert items[0]["title"] == "Kafka" and items[0]["description"]


@pytest.mark.parametrize(
    ("kind", "expected"),
    [("source", ["kafka", "http"]), ("transform", ["filter"]), ("sink", ["kafka"])],
)
def test_the_catalogue_filters_by_kind(api, kind, expected):
    body = api.get(PLUGINS_URL, {"kind": kind}).json()

    assert set(expected) <= {item["type"] for item in body["results"]}
    assert {item["kind"] for item in body["results"]} == {kind}


def test_an_unknown_kind_filter_is_a_400(api):
    response = api.get(PLUGINS_URL, {"kind": "sinks"})

    assert response.status_code == 400
    assert list(response.json()) == ["kind"]


def test_one_plugin_by_kind_and_type(api):
    source = api.get(f"{PLUGINS_URL}source/kafka/")
    sink = api.get(f"{PLUGINS_URL}sink/kafka/")

    assert source.status_code == sink.status_code == 200
    assert source.json()["config_schema"] == KafkaSourceConfig.model_json_schema()
    assert sink.json()["config_schema"] == KafkaSinkConfig.model_json_schema()
    assert (sink.json()["kind"], sink.json()["type"]) == ("sink", "kafka")


@pytest.mark.parametrize("path", ["source/nope/", "transform/kafka/", "sinks/kafka/"])
def test_an_unknown_plugin_is_a_404(api, path):
    response = api.get(f"{PLUGINS_URL}{path}")

    assert response.status_code == 404
    assert response.json()["detail"].startswith(
        ("unknown source", "unknown transform", "no plugin kind")
    )


# -- validate ----------------------------------------------------------------------------


def test_a_valid_config_comes_back_normalised(api):
    response = validate(api, f"{PLUGINS_URL}source/kafka/validate", {"config": SOURCE_CONFIG})

    assert response.status_code == 200
    body = response.json()
    assert body["valid"] is True
    assert body["config"] == KafkaSourceConfig.model_validate(SOURCE_CONFIG).model_dump(mode="json")
    assert body["config"] | SOURCE_CONFIG == body["config"]
    assert (body["config"]["starting_offsets"], body["config"]["format"]) == ("latest", "json")


def test_an_invalid_config_is_answered_per_field(api):
    config = {"bootstrap_servers": "no port", "starting_offsets": "soon", "colour": "red"}

    response = validate(api, f"{PLUGINS_URL}source/kafka/validate", {"config": config})

    assert response.status_code == 400
    body = response.json()
    assert body["valid"] is False
    assert set(body["errors"]) == {
        "config.bootstrap_servers",
        "config.topics",
        "config.starting_offsets",
        "config.colour",
    }
    assert body["errors"]["config.topics"] == ["field required (or set topic_pattern)"]
    assert body["errors"]["config.starting_offsets"][0].startswith("must be 'earliest', 'latest'")
    assert body["errors"]["config.colour"][0].startswith("unknown field; expected one of:")


def test_an_invalid_filter_pattern_names_each_problem(api):
    body = {"config": {"pattern": {"source": "aws.ec2", "data": {"x": [{"contains": 1}]}}}}

    response = validate(api, f"{PLUGINS_URL}transform/filter/validate", body)

    assert response.status_code == 400
    messages = response.json()["errors"]["config.pattern"]
    assert len(messages) == 2
    assert messages[0].startswith("data.x[0]") or messages[1].startswith("data.x[0]")


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        ({}, {"config": ["This field is required."]}),
        ({"config": ["a"]}, {"config": ["Must be a JSON object."]}),
        ({"config": None}, {"config": ["This field may not be null."]}),
    ],
)
def test_a_request_without_a_config_object_is_a_400(api, body, errors):
    response = validate(api, f"{PLUGINS_URL}sink/kafka/validate", body)

    assert response.status_code == 400
    assert response.json() == {"valid": False, "errors": errors}


def test_a_request_body_that_is_not_an_object_is_a_400(api):
    response = api.post(f"{PLUGINS_URL}sink/kafka/validate", ["config"], format="json")

    assert response.status_code == 400
    assert response.json()["valid"] is False


@pytest.mark.parametrize("path", ["source/kafka/validate", "kafka/validate?kind=source&"])
def test_a_config_not_valid_yet_may_be_answered_200(api, path):
    """The builder checks as the user types: a config not valid yet is an answer, not a
    failed request, so it asks with ?invalid_status=200; the body is the one a 400 carries."""
    config = {"bootstrap_servers": "no port"}
    url = f"{PLUGINS_URL}{path}"
    sep = "" if url.endswith("&") else "?"

    as_200 = api.post(f"{url}{sep}invalid_status=200", {"config": config}, format="json")
    as_400 = api.post(url.rstrip("&?"), {"config": config}, format="json")

    assert (as_200.status_code, as_400.status_code) == (200, 400)
    assert as_200.json() == as_400.json()
    assert as_200.json()["valid"] is False
    assert "config.topics" in as_200.json()["errors"]
    valid = api.post(f"{url}{sep}invalid_status=200", {"config": SOURCE_CONFIG}, format="json")
    assert (valid.status_code, valid.json()["valid"]) == (200, True)


def test_an_unknown_invalid_status_is_a_400_naming_it(api):
    response = api.post(
        f"{PLUGINS_URL}source/kafka/validate?invalid_status=201",
        {"config": SOURCE_CONFIG},
        format="json",
    )

    assert response.status_code == 400
    assert response.json()["valid"] is False  # the documented shape of a 400
    assert list(response.json()["errors"]) == ["invalid_status"]


@pytest.mark.parametrize(
    "path", ["source/nope/validate", "sink/filter/validate", "x/kafka/validate"]
)
def test_validating_for_an_unknown_plugin_is_a_404(api, path):
    response = validate(api, f"{PLUGINS_URL}{path}", {"config": {}})

    assert response.status_code == 404


def test_the_kind_may_be_left_out_when_the_type_is_unambiguous(api):
    body = {"config": {"pattern": {"type": ["order.created"]}}}

    response = validate(api, f"{PLUGINS_URL}filter/validate", body)

    assert response.status_code == 200
    assert response.json() == {"valid": True, **body}


def test_an_ambiguous_type_needs_a_kind(api):
    response = validate(api, f"{PLUGINS_URL}kafka/validate", {"config": SOURCE_CONFIG})

    assert response.status_code == 400
    (message,) = response.json()["kind"]
    assert "?kind=source" in message and "?kind=sink" in message


def test_the_kind_in_the_query_chooses_the_plugin(api):
    as_source = validate(
        api, f"{PLUGINS_URL}kafka/validate", {"config": SOURCE_CONFIG}, kind="source"
    )
    as_sink = validate(api, f"{PLUGINS_URL}kafka/validate", {"config": SOURCE_CONFIG}, kind="sink")

    assert as_source.status_code == 200
    assert as_sink.status_code == 400
    assert set(as_sink.json()["errors"]) == {"config.topic", "config.topics"}


def test_a_bad_kind_in_the_query_is_a_400(api):
    response = validate(api, f"{PLUGINS_URL}kafka/validate", {"config": {}}, kind="sinks")

    assert response.status_code == 400
    assert list(response.json()) == ["kind"]


@pytest.mark.parametrize(("type_", "kind"), [("nope", None), ("kafka", "transform")])
def test_validating_an_unknown_type_is_a_404(api, type_, kind):
    query = {"kind": kind} if kind else {}

    response = validate(api, f"{PLUGINS_URL}{type_}/validate", {"config": {}}, **query)

    assert response.status_code == 404
    assert type_ in response.json()["detail"]


def test_validating_changes_nothing(api):
    validate(api, f"{PLUGINS_URL}source/kafka/validate", {"config": SOURCE_CONFIG})
    validate(api, f"{PLUGINS_URL}source/kafka/validate", {"config": {}})

    assert not Channel.objects.exists()
    assert not LifecycleEvent.objects.exists()
