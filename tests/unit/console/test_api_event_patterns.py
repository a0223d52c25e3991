"""The pattern test bench, and every conformance vector run through it.

The vectors (../shared/conformance/event_patterns.json, or ``$SLUICE_CONFORMANCE_FILE``)
are loaded with the json module, so numbers stay numbers, and posted as JSON exactly as a
client would send them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.conformance import load_conformance

pytestmark = pytest.mark.django_db

TEST_URL = "/api/v1/event-patterns/test"
#: Vector ids the evaluator does not pass yet, with why (none today).
KNOWN_FAILURES: dict[str, str] = {}

VECTORS = load_conformance()["vectors"]
INVALID = load_conformance()["invalid_patterns"]


def post(api, body: Any):
    # The json module's own text (ASCII, numbers as Python writes them), as any client sends.
    return api.generic("POST", TEST_URL, json.dumps(body), content_type="application/json")


ORDER = {
    "specversion": "1.0",
    "id": "orders/0/42",
    "source": "kafka://orders",
    "type": "com.example.order.created",
    "data": {"total": 120, "items": [{"sku": "a"}, {"sku": "b"}]},
}


@pytest.mark.parametrize(
    ("pattern", "result"),
    [
        ({"data": {"total": [{"numeric": [">", 100]}]}}, True),
        ({"data": {"total": [{"numeric": [">", 200]}]}}, False),
        ({"type": [{"prefix": "com.example."}], "data": {"items": {"sku": ["b"]}}}, True),
        ({"data": {"total": ["120"]}}, False),  # JSON types never mix
    ],
)
def test_the_answer_is_whether_the_event_matches(api, pattern, result):
    response = post(api, {"pattern": pattern, "event": ORDER})

    assert response.status_code == 200
    assert response.json() == {"result": result}


def test_an_invalid_pattern_is_a_400_naming_each_problem(api):
    pattern = {"source": "aws.ec2", "data": {"x": [{"contains": "y"}]}}

    response = post(api, {"pattern": pattern, "event": ORDER})

    assert response.status_code == 400
    body = response.json()
    assert list(body) == ["pattern"]
    assert len(body["pattern"]) == 2
    assert any(message.startswith("source: ") for message in body["pattern"])


@pytest.mark.parametrize("event", [[ORDER], "event", 1, True])
def test_the_event_must_be_a_json_object(api, event):
    response = post(api, {"pattern": {"type": ["x"]}, "event": event})

    assert response.status_code == 400
    assert response.json() == {"event": ["Must be a JSON object."]}


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, {"pattern", "event"}),
        ({"pattern": {"type": ["x"]}}, {"event"}),
        ({"pattern": None, "event": None}, {"pattern", "event"}),
    ],
)
def test_pattern_and_event_are_required(api, body, fields):
    response = post(api, body)

    assert response.status_code == 400
    assert set(response.json()) == fields


def test_a_body_that_is_not_json_is_a_400(api):
    response = api.generic("POST", TEST_URL, "{not json", content_type="application/json")

    assert response.status_code == 400


@pytest.mark.parametrize("vector", VECTORS, ids=[v["id"] for v in VECTORS])
def test_conformance_vector_through_the_endpoint(api, vector):
    if vector["id"] in KNOWN_FAILURES:
        pytest.xfail(f"{vector['id']}: {KNOWN_FAILURES[vector['id']]}")

    response = post(api, {"pattern": vector["pattern"], "event": vector["event"]})

    assert response.status_code == 200, response.json()
    assert response.json() == {"result": vector["matches"]}, vector["note"]


@pytest.mark.parametrize("case", INVALID, ids=[case["id"] for case in INVALID])
def test_conformance_invalid_pattern_through_the_endpoint(api, case):
    response = post(api, {"pattern": case["pattern"], "event": {"id": "1"}})

    assert response.status_code == 400
    messages = response.json()["pattern"]
    assert messages and all(isinstance(m, str) and m for m in messages)


def test_the_conformance_file_is_complete():
    assert VECTORS and INVALID
    assert len({v["id"] for v in VECTORS + INVALID}) == len(VECTORS) + len(INVALID)
