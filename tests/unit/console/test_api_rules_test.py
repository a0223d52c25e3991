"""``POST /api/v1/event-patterns/test-rules``: which of a bus's rules an event reaches the
sinks of (patterns, switches and the rules' own filters; other transforms undecided), and
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


def results(response) -> dict[str, bool | None]:
    assert response.status_code == 200, response.json()
    return {item["rule"]: item["matched"] for item in response.json()["results"]}


def verdicts(response) -> dict[str, tuple[str, str]]:
    assert response.status_code == 200, response.json()
    return {item["rule"]: (item["verdict"], item["stage"]) for item in response.json()["results"]}


def filter_stage(pattern: Any) -> dict[str, Any]:
    return {"type": "filter", "config": {"pattern": pattern}}


US = {"data": {"region": ["us"]}}
EU = {"data": {"region": ["eu"]}}


def test_an_event_goes_to_every_enabled_rule_it_matches(api):
    rules = [
        {"name": "big-orders", "pattern": {"data": {"amount": [{"numeric": [">", 100]}]}}},
        {"name": "eu-orders", "pattern": {"data": {"region": ["eu"]}}},
        {"name": "everything"},
        {"name": "also-null", "pattern": None, "enabled": True},
        {"name": "created", "pattern": {"type": [{"suffix": ".created"}]}},
    ]

    response = post(api, {"rules": rules, "event": ORDER})

    matched = {"verdict": "matched", "pattern_matched": True, "stage": "", "reason": ""}
    assert response.json() == {
        "results": [
            {"rule": "big-orders", "matched": True, **matched},
            {
                "rule": "eu-orders",
                "matched": False,
                "verdict": "no_match",
                "pattern_matched": False,
                "stage": "",
                "reason": "Its pattern does not match the event.",
            },
            {"rule": "everything", "matched": True, **matched},
            {"rule": "also-null", "matched": True, **matched},
            {"rule": "created", "matched": True, **matched},
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
        "transforms": [filter_stage(US)],
        "sinks": [{"type": "kafka", "config": {"not": "read"}}],
    }

    assert results(post(api, {"rules": [rule], "event": ORDER})) == {"big-orders": True}


def test_a_rules_own_filter_that_drops_the_event_is_no_match(api):
    """The issue's "a US order matches 2 of 2 rules": the EU branch's filter drops it."""
    rules = [
        {"name": "eu", "transforms": [filter_stage(EU)]},
        {
            "name": "us",
            "transforms": [filter_stage(US), filter_stage({"type": [{"prefix": "com."}]})],
        },
        {
            "name": "us-then-big",
            "transforms": [
                filter_stage(US),
                filter_stage({"data": {"amount": [{"numeric": [">", 500]}]}}),
            ],
        },
    ]

    response = post(api, {"rules": rules, "event": ORDER})

    assert results(response) == {"eu": False, "us": True, "us-then-big": False}
    assert verdicts(response) == {
        "eu": ("dropped", "transforms[0]"),
        "us": ("matched", ""),
        "us-then-big": ("dropped", "transforms[1]"),
    }
    reasons = {item["rule"]: item["reason"] for item in response.json()["results"]}
    assert reasons["eu"] == "Its pattern matches; its filter (transform 1) drops the event."
    assert reasons["us"] == "Its pattern matches and its 2 filters keep the event."


def test_a_transform_only_spark_runs_leaves_the_rule_undecided(api):
    """Nothing is guessed past a transform without a Python twin: not even a filter after it
    that would drop the event as sent."""
    rules = [
        {"name": "masked", "transforms": [{"type": "mask", "config": {"fields": ["data.card"]}}]},
        {
            "name": "filter-then-sql",
            "transforms": [filter_stage(US), {"type": "sql", "config": {}}, filter_stage(EU)],
        },
        {"name": "filter-drops-first", "transforms": [filter_stage(EU), {"type": "mask"}]},
        {"name": "pattern-fails-first", "pattern": EU, "transforms": [{"type": "mask"}]},
    ]

    response = post(api, {"rules": rules, "event": ORDER})

    assert results(response) == {
        "masked": None,
        "filter-then-sql": None,
        "filter-drops-first": False,
        "pattern-fails-first": False,
    }
    assert verdicts(response) == {
        "masked": ("undecided", "transforms[0]"),
        "filter-then-sql": ("undecided", "transforms[1]"),
        "filter-drops-first": ("dropped", "transforms[0]"),
        "pattern-fails-first": ("no_match", ""),
    }
    reason = response.json()["results"][1]["reason"]
    assert reason == (
        "Its pattern matches, but its transform 2 (sql) runs only in Spark: whether the "
        "event reaches the sinks is not decided here."
    )


def test_a_disabled_rule_is_not_matched_whatever_its_transforms(api):
    rules = [{"name": "off", "enabled": False, "transforms": [{"type": "mask"}]}]

    response = post(api, {"rules": rules, "event": ORDER})

    assert verdicts(response) == {"off": ("disabled", "")}
    assert results(response) == {"off": False}


def test_an_invalid_filter_of_a_rule_is_located_at_its_pattern(api):
    rules = [
        {"name": "ok", "transforms": [filter_stage(US)]},
        {"name": "bad", "transforms": [{"type": "mask"}, filter_stage({"source": "aws.ec2"})]},
        {"name": "no-type", "transforms": [{"config": {}}]},
        {"name": "not-list", "transforms": {"type": "filter"}},
    ]

    response = post(api, {"rules": rules, "event": ORDER})

    assert response.status_code == 400
    body = response.json()
    assert sorted(body) == [
        "rules[1].transforms[1].config.pattern",
        "rules[2].transforms[0].type",
        "rules[3].transforms",
    ]
    assert body["rules[1].transforms[1].config.pattern"][0].startswith("source: ")


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


def test_every_conformance_vector_as_a_rules_filter(api):
    """A rule's filter is decided by the same evaluator as its pattern: each vector's pattern
    as the one filter of a rule without a pattern keeps exactly the events it matches."""
    rules = [
        {"name": f"f{i}", "transforms": [filter_stage(v["pattern"])]} for i, v in enumerate(VECTORS)
    ]
    checked = 0
    for key, event in _events():
        found = verdicts(post(api, {"rules": rules, "event": event}))
        for index, vector in enumerate(VECTORS):
            if json.dumps(vector["event"], sort_keys=True) == key:
                expected = ("matched", "") if vector["matches"] else ("dropped", "transforms[0]")
                assert found[f"f{index}"] == expected, (vector["id"], vector["note"])
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
