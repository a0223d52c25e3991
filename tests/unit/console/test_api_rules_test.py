"""``POST /api/v1/event-patterns/test-rules``: which of a bus's rules an event goes to, and
every conformance vector run through it as rules of one bus."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pipelines.spec.channel import MAX_RULES
from tests.support.conformance import load_conformance

pytestmark = pytest.mark.django_db

URL = "/api/v1/event-patterns/test-rules"

VECTORS = load_conformance()["vectors"]
INVALID = load_conformance()["invalid_patterns"]

ORDER = {
    "specversion": "1.0",
    "id": "orders/0/42",
    "source": "kafka://orders",
    "type": "com.example.order.created",
    "data": {"amount": 120, "region": "us"},
}


def post(client, body: Any):
    return client.generic("POST", URL, json.dumps(body), content_type="application/json")


def results(response) -> dict[str, bool]:
    assert response.status_code == 200, response.json()
    return {item["rule"]: item["matched"] for item in response.json()["results"]}


def test_an_event_goes_to_every_enabled_rule_it_matches(api):
    rules = [
        {"name": "big-orders", "pattern": {"data": {"amount": [{"numeric": [">", 100]}]}}},
        {"name": "eu-orders", "pattern": {"data": {"region": ["eu"]}}},
        {"name": "everything"},
        {"name": "also-null", "pattern": None, "enabled": True},
        {"name": "created", "pattern": {"type": [{"suffix": ".created"}]}},
    ]

    response = post(api, {"rules": rules, "event": ORDER})

    assert response.json() == {
        "results": [
            {"rule": "big-orders", "matched": True},
            {"rule": "eu-orders", "matched": False},
            {"rule": "everything", "matched": True},
            {"rule": "also-null", "matched": True},
            {"rule": "created", "matched": True},
        ]
    }


def test_a_disabled_rule_matches_nothing(api):
    rules = [
        {"name": "off", "pattern": {"type": [{"prefix": "com."}]}, "enabled": False},
        {"name": "off-all", "enabled": False},
        {"name": "on", "pattern": {"type": [{"prefix": "com."}]}},
    ]

    assert results(post(api, {"rules": rules, "event": ORDER})) == {
        "off": False,
        "off-all": False,
        "on": True,
    }


def test_a_rule_may_be_sent_as_it_stands_in_the_spec(api):
    rule = {
        "name": "big-orders",
        "description": "over 100",
        "enabled": True,
        "pattern": {"data": {"amount": [{"numeric": [">=", 120]}]}},
        "transforms": [{"type": "unknown", "config": {"not": "read"}}],
        "sinks": [{"type": "kafka", "config": {}}],
    }

    assert results(post(api, {"rules": [rule], "event": ORDER})) == {"big-orders": True}


def test_errors_are_located_at_the_rule_and_field(api):
    rules = [
        {"name": "ok", "pattern": {"type": ["x"]}},
        {"name": "bad-pattern", "pattern": {"source": "aws.ec2", "data": {"x": [{"nope": 1}]}}},
        {"name": "Bad_Name"},
        {"name": "typo", "patern": {"type": ["x"]}},
        {"name": "flag", "enabled": "sometimes"},
        "not a rule",
        {"pattern": {"type": ["x"]}},
    ]

    response = post(api, {"rules": rules, "event": ORDER})

    assert response.status_code == 400
    body = response.json()
    assert sorted(body) == [
        "rules[1].pattern",
        "rules[2].name",
        "rules[3].patern",
        "rules[4].enabled",
        "rules[5]",
        "rules[6].name",
    ]
    assert len(body["rules[1].pattern"]) == 2
    assert any(message.startswith("source: ") for message in body["rules[1].pattern"])
    assert "lowercase letters" in body["rules[2].name"][0]
    assert "Unknown field" in body["rules[3].patern"][0]


def test_rule_names_are_unique(api):
    rules = [{"name": "a"}, {"name": "b"}, {"name": "a"}]

    response = post(api, {"rules": rules, "event": ORDER})

    assert response.status_code == 400
    assert response.json() == {
        "rules[2].name": ["rules[0] is named 'a' too; rule names are unique in a bus."]
    }


def test_a_name_with_a_trailing_newline_is_refused(api):
    response = post(api, {"rules": [{"name": "a\n"}], "event": ORDER})

    assert response.status_code == 400
    assert list(response.json()) == ["rules[0].name"]


@pytest.mark.parametrize(
    ("body", "keys"),
    [
        ({}, ["event", "rules"]),
        ({"rules": [], "event": ORDER}, ["rules"]),
        ({"rules": {"name": "a"}, "event": ORDER}, ["rules"]),
        ({"rules": [{"name": "a"}], "event": [ORDER]}, ["event"]),
        ({"rules": [{"name": f"r{i}"} for i in range(MAX_RULES + 1)], "event": ORDER}, ["rules"]),
    ],
)
def test_rules_and_event_are_required_and_bounded(api, body, keys):
    response = post(api, body)

    assert response.status_code == 400
    assert sorted(response.json()) == keys


def test_as_many_rules_as_a_bus_holds_are_tested_at_once(api):
    rules = [
        {"name": f"r{i}", "pattern": {"data": {"amount": [{"numeric": [">", i]}]}}}
        for i in range(MAX_RULES)
    ]

    found = results(post(api, {"rules": rules, "event": ORDER}))

    assert [name for name, matched in found.items() if matched] == [f"r{i}" for i in range(120)]


def test_authentication_is_required(anon):
    response = post(anon, {"rules": [{"name": "a"}], "event": ORDER})

    assert response.status_code == 401


def test_a_body_that_is_not_json_is_a_400(api):
    response = api.generic("POST", URL, "{not json", content_type="application/json")

    assert response.status_code == 400


# -- conformance: each vector's pattern as a rule of one bus --------------------------------


def _vector_rules() -> list[dict[str, Any]]:
    """Every vector's pattern as a rule (named after its position), plus a disabled copy of
    the first and a rule without a pattern, so several kinds of rules share each request."""
    rules = [{"name": f"v{i}", "pattern": v["pattern"]} for i, v in enumerate(VECTORS)]
    rules.append({"name": "disabled", "pattern": VECTORS[0]["pattern"], "enabled": False})
    rules.append({"name": "every-event", "pattern": None})
    return rules


def _events() -> list[tuple[str, dict[str, Any]]]:
    """The vectors' distinct events (as JSON text, with the event)."""
    seen: dict[str, dict[str, Any]] = {}
    for vector in VECTORS:
        seen.setdefault(json.dumps(vector["event"], sort_keys=True), vector["event"])
    return list(seen.items())


def test_every_conformance_vector_through_the_rules_of_one_bus(api):
    assert len(VECTORS) + 2 <= MAX_RULES, "the vectors no longer fit in one bus"
    rules = _vector_rules()
    checked = 0
    for key, event in _events():
        found = results(post(api, {"rules": rules, "event": event}))
        assert found["disabled"] is False
        assert found["every-event"] is True
        for index, vector in enumerate(VECTORS):
            if json.dumps(vector["event"], sort_keys=True) == key:
                assert found[f"v{index}"] is vector["matches"], (vector["id"], vector["note"])
                checked += 1
    assert checked == len(VECTORS)


@pytest.mark.parametrize("case", INVALID, ids=[case["id"] for case in INVALID])
def test_an_invalid_conformance_pattern_is_located_at_its_rule(api, case):
    rules = [
        {"name": "fine", "pattern": {"type": ["x"]}},
        {"name": "bad", "pattern": case["pattern"]},
    ]

    response = post(api, {"rules": rules, "event": {"id": "1"}})

    assert response.status_code == 400
    body = response.json()
    assert list(body) == ["rules[1].pattern"], case["id"]
    assert all(isinstance(m, str) and m for m in body["rules[1].pattern"])
