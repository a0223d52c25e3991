"""Event patterns in pure Python: validation, compilation and the ``matches`` evaluator.

The conformance vectors (../shared/conformance/event_patterns.json) run through ``matches``
here and through the Spark filter in ``test_patterns_spark.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from pipelines.spec.patterns import (
    PatternError,
    Step,
    compile_pattern,
    matches,
    validate_pattern,
)
from pipelines.spec.patterns.ip import parse_cidr, parse_ip
from pipelines.spec.patterns.matchers import ExactString
from pipelines.spec.patterns.parser import MAX_RULES, wildcard_segments
from tests.support.conformance import load_conformance

VECTORS: list[dict[str, Any]] = load_conformance()["vectors"]
INVALID: list[dict[str, Any]] = load_conformance()["invalid_patterns"]


@pytest.mark.parametrize("vector", VECTORS, ids=[v["id"] for v in VECTORS])
def test_conformance_vector(vector: dict[str, Any]) -> None:
    assert matches(vector["pattern"], vector["event"]) is vector["matches"], vector["note"]


@pytest.mark.parametrize("case", INVALID, ids=[case["id"] for case in INVALID])
def test_conformance_invalid_pattern(case: dict[str, Any]) -> None:
    with pytest.raises(PatternError) as raised:
        validate_pattern(case["pattern"])
    assert raised.value.messages and all(raised.value.messages)


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (
            {"source": "aws.ec2"},
            "source: must be an object or an array of match values, got a string; write",
        ),
        ({}, "a pattern needs a field"),
        ([{"a": [1]}], "a pattern must be a JSON object, got an array"),
        ({"a": {}}, "a: empty objects are not allowed"),
        ({"a": []}, "a: empty arrays are not allowed; list at least one match value"),
        (
            {"a": [[1]]},
            "a[0]: match values must be strings, numbers, true, false, null or operator objects",
        ),
        (
            {"a": [{"prefix": "x", "suffix": "y"}]},
            "a[0]: an operator object holds exactly one operator, found: prefix, suffix",
        ),
        ({"a": [{}]}, "a[0]: an operator object holds exactly one operator, found: nothing"),
        (
            {"a": [{"regex": "x"}]},
            "a[0].regex: unknown operator 'regex'; expected one of: prefix, suffix, equals",
        ),
        (
            {"a": [{"prefix": {"ignore-case": "x"}}]},
            'a[0].prefix: prefix takes a string or {"equals-ignore-case": string}, got an object',
        ),
        (
            {"a": [{"equals-ignore-case": 1}]},
            "a[0].equals-ignore-case: equals-ignore-case takes a string, got a number",
        ),
        (
            {"a": [{"wildcard": "a\\b"}]},
            "a[0].wildcard: invalid wildcard 'a\\\\b': invalid escape at position 1",
        ),
        ({"a": [{"exists": 1}]}, "a[0].exists: exists takes true or false, got a number"),
        (
            {"a": [{"cidr": "10.0.0.0"}]},
            "a[0].cidr: malformed CIDR '10.0.0.0': expected address/bits, e.g. 10.0.0.0/24",
        ),
        (
            {"a": [{"cidr": "10.0.0/8"}]},
            "a[0].cidr: malformed CIDR '10.0.0/8': '10.0.0' is not an IP address",
        ),
        (
            {"a": [{"cidr": "::/129"}]},
            "a[0].cidr: malformed CIDR '::/129': IPv6 mask bits must be <= 128",
        ),
        (
            {"a": [{"numeric": [">", 1, "<"]}]},
            'a[0].numeric: numeric takes ["<op>", number] or a range like [">", 0, "<=", 5]',
        ),
        (
            {"a": [{"numeric": ["==", 1]}]},
            "a[0].numeric[0]: unknown numeric operator '=='; use =, <, <=, > or >=",
        ),
        (
            {"a": [{"numeric": ["=", 1, "<", 5]}]},
            "a[0].numeric: numeric = takes exactly one number",
        ),
        (
            {"a": [{"numeric": [">=", 5, "<=", 5]}]},
            "a[0].numeric: the lower bound 5 must be less than the upper bound 5",
        ),
        (
            {"a": [{"numeric": [">", True]}]},
            "a[0].numeric[1]: the operand of > must be a number, got a boolean",
        ),
        (
            {"a": [{"numeric": ["<", 2**53 + 1]}]},
            "a[0].numeric[1]: 9007199254740993 cannot be compared exactly",
        ),
        (
            {"a": [{"anything-but": []}]},
            "a[0].anything-but: anything-but arrays hold only strings or only numbers",
        ),
        (
            {"a": [{"anything-but": None}]},
            "a[0].anything-but: anything-but takes a string, a number, an array of strings or",
        ),
        (
            {"a": [{"anything-but": {"prefix": ""}}]},
            "a[0].anything-but.prefix: anything-but prefix must not be empty",
        ),
        (
            {"a": [{"anything-but": {"suffix": [1]}}]},
            "a[0].anything-but.suffix: anything-but suffix takes a string or an array of strings",
        ),
        (
            {"a": [{"anything-but": {"wildcard": "**"}}]},
            "a[0].anything-but.wildcard: invalid wildcard '**': consecutive wildcard characters",
        ),
        ({"$or": {"a": [1]}}, "$or: $or must be an array of at least two objects, got an object"),
        ({"$or": [{"a": [1]}, "b"]}, "$or[1]: each $or branch must be an object, got a string"),
        (
            {"$or": [{"a": [1]}, {"prefix": [1]}]},
            "$or[1].prefix: 'prefix' is reserved and cannot be a field name inside $or",
        ),
    ],
)
def test_invalid_pattern_message(pattern: Any, expected: str) -> None:
    with pytest.raises(PatternError) as raised:
        validate_pattern(pattern)
    assert len(raised.value.messages) == 1
    assert raised.value.messages[0].startswith(expected)


def test_every_problem_of_a_pattern_is_reported() -> None:
    with pytest.raises(PatternError) as raised:
        validate_pattern({"a": 1, "b": [{"exists": "yes"}], "c": {"d": [{"numeric": ["<", "x"]}]}})
    assert [location for location, _ in raised.value.problems] == [
        "a",
        "b[0].exists",
        "c.d[0].numeric[1]",
    ]
    assert str(raised.value).startswith("a: must be an object or an array of match values")


def test_or_expansion_is_bounded() -> None:
    branches = [{"k": [i]} for i in range(4)]
    pattern = {f"f{level}": {"$or": branches} for level in range(5)}  # 4**5 alternatives
    with pytest.raises(PatternError, match=f"more than {MAX_RULES} alternatives"):
        validate_pattern(pattern)


def test_rules_follow_event_ruler_or_semantics() -> None:
    compiled = compile_pattern(
        {"source": ["a"], "$or": [{"source": ["b"]}, {"x": [1], "$or": [{"y": [2]}, {"z": [3]}]}]}
    )
    paths = [[(step.path, step.matchers) for step in rule.steps] for rule in compiled.rules]
    b, a = (("source",), (ExactString("b"),)), (("source",), (ExactString("a"),))
    assert len(paths) == 3
    assert paths[0] == [b]  # a later value for the same field replaces the earlier one
    assert [path for path, _ in paths[1]] == [("source",), ("x",), ("y",)]
    assert paths[1][0] == a and paths[2][0] == a


def test_steps_are_sorted_like_event_ruler() -> None:
    rule = compile_pattern({"c.x": [1], "c-count": [1], "b": {"z": [1]}, "a": [1]}).rules[0]
    assert [".".join(step.path) for step in rule.steps] == ["a", "b.z", "c-count", "c.x"]


def test_a_field_accepting_absence_forks_the_rule() -> None:
    rules = compile_pattern({"tier": ["gold", {"exists": False}]}).rules
    assert [rule.steps for rule in rules] == [
        (Step(("tier",), (ExactString("gold"),)),),
        (Step(("tier",), absent=True),),
    ]


EVENT = {
    "id": "1",
    "source": "/orders",
    "type": "com.example.order",
    "data": {
        "amount": 300.0,
        "code": "100",
        "tags": ["a", "b"],
        "flag": False,
        "nothing": None,
        "ip": "2001:DB8::1",
        "items": [{"sku": "a", "qty": 1}, {"sku": "b"}],
        "path": "C:\\x*y",
    },
}


@pytest.mark.parametrize(
    ("data_pattern", "expected"),
    [
        ({"amount": [300]}, True),
        ({"amount": [3e2]}, True),
        ({"amount": [300.0000001]}, False),
        ({"amount": ["300"]}, False),
        ({"code": [100]}, False),
        ({"code": ["100"]}, True),
        ({"flag": [False]}, True),
        ({"flag": [0]}, False),
        ({"nothing": [None]}, True),
        ({"nothing": [{"exists": True}]}, True),
        ({"missing": [{"exists": False}]}, True),
        ({"tags": ["b"]}, True),
        ({"tags": [{"anything-but": ["a", "b"]}]}, False),
        ({"ip": ["2001:db8:0:0::1"]}, True),
        ({"ip": [{"exactly": "2001:db8::1"}]}, False),
        ({"ip": [{"cidr": "2001:db8::/127"}]}, True),
        ({"path": [{"wildcard": "C:\\\\x\\*y"}]}, True),
        ({"path": [{"wildcard": "C:*"}]}, True),
        ({"amount": [{"anything-but": {"prefix": "3"}}]}, True),
        ({"items": {"sku": ["b"], "qty": [{"exists": False}]}}, False),
        ({"items": {"sku": ["b"], "sqty": [{"exists": False}]}}, True),
        ({"items": {"qty": [1], "sku": ["a"]}}, True),
        ({"items": {"qty": [1], "sku": ["b"]}}, False),
    ],
)
def test_matches_edge_cases(data_pattern: dict[str, Any], expected: bool) -> None:
    assert matches({"data": data_pattern}, EVENT) is expected


def test_absence_before_a_value_step_means_in_no_array_element() -> None:
    event = {"items": [{"sku": "a"}, {"sku": "b", "discount": 5}]}
    # "items.discount" sorts before "items.sku": it is checked before an element is chosen.
    assert matches({"items": {"sku": ["a"], "discount": [{"exists": False}]}}, event) is False
    # "items.zdiscount" sorts after "items.sku": only the chosen element must lack it.
    event = {"items": [{"sku": "a"}, {"sku": "b", "zdiscount": 5}]}
    assert matches({"items": {"sku": ["a"], "zdiscount": [{"exists": False}]}}, event) is True


def test_matches_rejects_invalid_patterns_and_non_object_events() -> None:
    with pytest.raises(PatternError):
        matches({"a": "b"}, {"a": "b"})
    assert matches({"a": [{"exists": False}]}, ["not", "an", "object"]) is False  # type: ignore[arg-type]


def test_ip_parsing() -> None:
    assert parse_ip("10.0.0.1").key == "4:0A000001"  # type: ignore[union-attr]
    assert parse_ip("::ffff:a00:1").key == "6:" + "0" * 20 + "FFFF0A000001"  # type: ignore[union-attr]
    assert parse_ip("2001:db8::").key == "6:" + "20010DB8" + "0" * 24  # type: ignore[union-attr]
    for text in ("010.0.0.1", "256.0.0.1", "1.2.3", "1::2::3", "1:2:3:4:5:6:7:8:9", ":::", "x"):
        assert parse_ip(text) is None, text
    low, high = parse_cidr("10.0.0.7/24")
    assert (low.key, high.key) == ("4:0A000000", "4:0A0000FF")


def test_wildcard_segments() -> None:
    assert wildcard_segments("a*b\\*c\\\\*") == ("a", "b*c\\", "")
    assert wildcard_segments("*") == ("", "")
    assert wildcard_segments("") == ("",)
    with pytest.raises(ValueError, match="consecutive"):
        wildcard_segments("a**")
