"""Sluice's ``matches`` function (``EventPatterns.java``) on the edges the conformance vectors
may miss, against the Python evaluator; where the semantics are Spark's own (numbers, lower
case, values JSON cannot hold), against the built-in SQL predicate too.

(The built-in predicate is checked against the evaluator by ``test_patterns_spark``; it is
not run on every case here: Spark's SQL parser keeps a cache of what it parsed, and the
built-in text of hundreds of random patterns holds a good part of the test session's heap.)
"""

from __future__ import annotations

import json
import random
from functools import partial
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines import native
from pipelines.patterns import (
    filter_by_pattern,
    filter_events,
    native_pattern_sql,
    pattern_predicate,
    steps_json,
    variant_child,
)
from pipelines.spec.patterns import compile_pattern, matches
from tests.support.random_patterns import RandomPatterns

pytestmark = pytest.mark.spark


WAYS = {
    "native": (partial(native.field, "v"), True),
    "builtin": (partial(variant_child, "v"), False),
}


def decided(
    spark: SparkSession, events: list[str], patterns: list[Any], ways: tuple[str, ...]
) -> dict[str, Any]:
    """For each way to decide (``native``, ``builtin``): per pattern, the indexes of the
    events (JSON object texts) it matches; one query per way."""
    assert native.native_functions(spark)  # registers them: the test session has the jar
    frame = spark.createDataFrame(list(enumerate(events)), "i int, event string")
    frame = frame.withColumn("v", F.parse_json("event"))
    results = {}
    for way in ways:
        child, native_matching = WAYS[way]
        columns = [
            pattern_predicate(p, child, native_matching=native_matching).alias(f"p{n}")
            for n, p in enumerate(patterns)
        ]
        rows = frame.select("i", *columns).collect()
        results[way] = [{row.i for row in rows if row[f"p{n}"]} for n in range(len(patterns))]
    return results


def assert_all_agree(
    spark: SparkSession, events: list[Any], patterns: list[Any], *, builtin: bool = False
) -> None:
    """The native matcher (and with ``builtin`` the built-in predicate) keeps the events the
    evaluator matches; ``events`` are objects or JSON texts (numbers Python would not write)."""
    texts = [e if isinstance(e, str) else json.dumps(e, ensure_ascii=False) for e in events]
    parsed = [json.loads(text) for text in texts]
    results = decided(spark, texts, patterns, ("native", "builtin") if builtin else ("native",))
    for n, pattern in enumerate(patterns):
        expected = {i for i, event in enumerate(parsed) if matches(pattern, event)}
        for way, kept in results.items():
            assert kept[n] == expected, (way, json.dumps(pattern), [texts[i] for i in expected])


# -- arrays ----------------------------------------------------------------------------------


def test_arrays_nested_three_deep_are_searched_and_four_deep_are_not(spark: SparkSession) -> None:
    events = [
        {"a": "x"},
        {"a": ["x"]},
        {"a": [["x"]]},
        {"a": [[["x"]]]},
        {"a": [[[["x"]]]]},
        {"a": [1, [2, [3, ["x"]]]]},
        {"a": [[[{"b": "x"}]]]},
        {"a": [[[[{"b": "x"}]]]]},
        {"a": [{"b": [[["x"]]]}]},
        {"a": [{"b": [[[["x"]]]]}]},
        {"a": [[[[]]]]},
        {"a": []},
    ]
    patterns = [
        {"a": ["x"]},
        {"a": {"b": ["x"]}},
        {"a": [{"exists": True}]},
        {"a": [{"exists": False}]},
        {"a": {"b": [{"exists": False}]}},
        {"a": [{"anything-but": "x"}]},
    ]
    assert_all_agree(spark, events, patterns)
    assert [matches({"a": ["x"]}, e) for e in events[:6]] == [True, True, True, True, False, False]


def test_absence_before_and_after_the_chosen_element(spark: SparkSession) -> None:
    """Steps sort by path: ``a.b`` before ``a.c`` before ``a.d``. An absence before the first
    value step must hold in every element; after it, in the element it chose."""
    events = [
        {"a": [{"c": 1}, {"c": 2, "b": 0}]},
        {"a": [{"c": 1}, {"c": 2}]},
        {"a": [{"c": 1, "d": 0}, {"c": 1}]},
        {"a": [{"c": 1, "d": 0}]},
        {"a": [[{"c": 1}], [{"c": 1, "d": 0}]]},
        {"a": {"c": 1, "b": None}},
        {"a": {"c": 1, "b": {}}},
        {"a": {"c": 1, "b": []}},
        {"a": {"c": 1, "b": [None]}},
        {"a": [{"c": 1, "b": [[[[0]]]]}]},
        {"a": [{"c": 1}, "b"]},
    ]
    patterns = [
        {"a": {"b": [{"exists": False}], "c": [1]}},  # before: in no element
        {"a": {"c": [1], "d": [{"exists": False}]}},  # after: not in the chosen element
        {"a": {"b": [{"exists": False}], "c": [1], "d": [{"exists": False}]}},
        {"a": {"b": [{"exists": False}], "d": [{"exists": False}]}},  # absences only
        {"a": {"c": [2], "b": [0]}},  # value steps in one element
    ]
    assert_all_agree(spark, events, patterns)
    assert matches(patterns[0], events[0]) is False and matches(patterns[1], events[2]) is True


def test_json_null_is_a_value_and_a_missing_field_is_not(spark: SparkSession) -> None:
    events = [{"a": None}, {}, {"a": [None]}, {"a": []}, {"a": {}}, {"a": "null"}, {"b": None}]
    patterns = [
        {"a": [None]},
        {"a": [{"exists": True}]},
        {"a": [{"exists": False}]},
        {"a": [{"anything-but": "x"}]},
        {"a": ["null"]},
        {"b": [None], "a": [{"exists": False}]},
    ]
    assert_all_agree(spark, events, patterns)


# -- numbers ---------------------------------------------------------------------------------

NUMBER_TEXTS = [
    "0", "-0", "-0.0", "1", "1.0", "1.10", "100.00", "1e2", "0.1", "0.30000000000000004",
    "2.5e-3", "1e300", "1e400", "-1e400", "5e-324", "1e-400", "9007199254740993",
    "12345678901234567890123", "1234567890123456789012345678901234567890",
    "123456789.123456789123456789", "-300", "3e2", "299.99999999999999999",
    "1.7976931348623157e308", "18446744073709551616",
]  # fmt: skip


def test_numbers_compare_as_the_doubles_spark_reads(spark: SparkSession) -> None:
    """Integers, decimals (DECIMAL4/8/16 in the VARIANT), doubles, huge ones (``1e400``
    parses as an infinite DOUBLE: no finite number equals it, exists still holds)."""
    events = [f'{{"n": {text}}}' for text in NUMBER_TEXTS] + ['{"n": "1"}', '{"n": true}']
    patterns = [
        {"n": [0]},
        {"n": [1]},
        {"n": [100]},
        {"n": [300]},
        {"n": [0.1]},
        {"n": [9007199254740992]},
        {"n": [1e300]},
        {"n": [{"numeric": [">", 0]}]},
        {"n": [{"numeric": [">=", 0, "<", 1]}]},
        {"n": [{"numeric": ["<", -1e300]}]},
        {"n": [{"numeric": [">", 1e300]}]},
        {"n": [{"numeric": ["=", 300]}]},
        {"n": [{"numeric": [">", 299.99999999999997, "<=", 300]}]},
        {"n": [{"anything-but": [0, 1]}]},
        {"n": [{"exists": True}]},
    ]
    assert_all_agree(spark, events, patterns, builtin=True)


def test_values_json_cannot_hold_are_read_as_the_builtin_path_reads_them(
    spark: SparkSession,
) -> None:
    """A VARIANT built in SQL may hold NaN, infinities, a FLOAT or a DATE: a FLOAT is a
    number, a value that is not finite is none (no number matcher accepts it) but it is a
    leaf (exists, anything-but), as a DATE is."""
    values = (
        "CAST(double('NaN') AS VARIANT)",
        "CAST(double('inf') AS VARIANT)",
        "CAST(double('-inf') AS VARIANT)",
        "CAST(CAST(1.5 AS FLOAT) AS VARIANT)",
        "CAST(DATE '2024-01-01' AS VARIANT)",
        "CAST(NULL AS VARIANT)",
    )
    frame = spark.sql(
        " UNION ALL ".join(f"SELECT {n} AS i, {v} AS n" for n, v in enumerate(values))
    )
    patterns = [
        {"n": [{"numeric": [">", 0]}]},
        {"n": [{"numeric": ["<", 0]}]},
        {"n": [1.5]},
        {"n": [{"exists": True}]},
        {"n": [{"anything-but": [1]}]},
        {"n": [{"exists": False}]},
    ]
    kept = {
        native_reads: [
            sorted(
                row.i
                for row in filter_by_pattern(
                    frame, p, lambda _: "n", native_reads=native_reads
                ).collect()
            )
            for p in patterns
        ]
        for native_reads in (True, False)
    }
    assert kept[True] == kept[False]
    assert kept[True] == [[3], [], [3], [0, 1, 2, 3, 4], [0, 1, 2, 3, 4], [5]]


# -- strings ---------------------------------------------------------------------------------


def test_ignore_case_lower_cases_as_spark_lower_does(spark: SparkSession) -> None:
    texts = [
        "Été", "ÉTÉ", "été", "ete", "İstanbul", "i̇stanbul", "istanbul", "ΟΔΟΣ", "οδος", "οδοσ",
        "Straße", "STRASSE", "ẞ", "ß", "ǅ", "\u13a0", "\uab70", "𐐀", "𐐨", "K", "k", "ABC",
        "abc", "", "X" * 70, "x" * 70,
    ]  # fmt: skip
    events = [{"s": text} for text in texts]
    patterns = [
        {"s": [{"equals-ignore-case": text}]} for text in ("été", "İSTANBUL", "οδος", "ß", "𐐨", "k")
    ] + [
        {"s": [{"prefix": {"equals-ignore-case": "İs"}}]},
        {"s": [{"prefix": {"equals-ignore-case": "ÉT"}}]},
        {"s": [{"suffix": {"equals-ignore-case": "ΟΣ"}}]},
        {"s": [{"suffix": {"equals-ignore-case": "xX"}}]},
        {"s": [{"anything-but": {"equals-ignore-case": ["abc", "été"]}}]},
        {"s": [{"prefix": "É"}, {"suffix": "ß"}]},
    ]
    assert_all_agree(spark, events, patterns, builtin=True)


def test_wildcards_with_escapes(spark: SparkSession) -> None:
    texts = ["x*y", "x*yz", "xzyz", "\\", "\\x", "a*b", "ab", "a**b", "*", "", "ééé", "aXbXc"]
    events = [{"w": text} for text in texts]
    wildcards = ["x\\*y*", "\\\\*", "a\\*b", "*\\**", "\\*", "", "*", "é*é", "a*b*c", "*X*X*"]
    assert_all_agree(spark, events, [{"w": [{"wildcard": w}]} for w in wildcards])


def test_many_exact_strings_are_looked_up_in_a_table(spark: SparkSession) -> None:
    values = [f"v{i}" for i in range(40)] + ["", "é", "x" * 100]
    events = [{"s": v} for v in [*values, "v40", "V1", "v", "x" * 99]] + [{"s": 1}, {"s": None}]
    patterns = [
        {"s": values},
        {"s": [{"anything-but": values}]},
        {"s": values[:5]},
        {"s": [*values, 1]},
    ]
    assert_all_agree(spark, events, patterns)


# -- IP addresses ----------------------------------------------------------------------------


def random_ip_text(rnd: random.Random) -> str:
    """A valid address, one altered a little, or random characters of addresses."""
    if rnd.random() < 0.4:
        return "".join(rnd.choice("0123456789abcdefABCDEF:.g ") for _ in range(rnd.randint(0, 18)))
    if rnd.random() < 0.5:
        text = ".".join(str(rnd.choice([0, 1, 9, 10, 99, 100, 255, 256, 300])) for _ in range(4))
    else:
        groups = [f"{rnd.randrange(0x10000):x}" for _ in range(8)]
        start, length = rnd.randrange(8), rnd.randrange(9)
        text = ":".join(groups[:start]) + "::" + ":".join(groups[start + length :])
        if rnd.random() < 0.3:
            text = ":".join(groups)
    if rnd.random() < 0.3:
        i = rnd.randrange(len(text) + 1)
        text = text[:i] + rnd.choice(["", ":", ".", "0", "::", "f", "ffff"]) + text[i + 1 :]
    return text


def test_ip_ranges_read_addresses_as_the_python_parser(spark: SparkSession) -> None:
    rnd = random.Random(20261125)
    texts = list(dict.fromkeys(random_ip_text(rnd) for _ in range(1500)))
    texts += ["2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db9::", "::ffff:a00:1"]
    events = [{"ip": text} for text in texts]
    patterns = [
        {"ip": [{"cidr": "0.0.0.0/0"}]},
        {"ip": [{"cidr": "::/0"}]},
        {"ip": [{"cidr": "10.0.0.0/8"}]},
        {"ip": [{"cidr": "2001:db8::/32"}]},
        {"ip": [{"cidr": "8000::/1"}]},
        {"ip": [{"cidr": "::/1"}, {"cidr": "255.255.255.255/32"}]},
        {"ip": [{"anything-but": "10.0.0.1"}]},
    ]
    assert_all_agree(spark, events, patterns)
    v6 = sum(matches(patterns[1], e) for e in events)
    v4 = sum(matches(patterns[0], e) for e in events)
    assert v6 > 100 and v4 > 100 and v6 + v4 < len(events) - 100  # valid and invalid ones


# -- objects, keys, rules --------------------------------------------------------------------

UNICODE_KEYS = ["a", "a.b", "é", "\ue000", "\uffff", "𝄞", "😀", "\uff41", "", " ", "Z", "it's"]


def test_members_of_large_objects_are_found_by_a_binary_search(spark: SparkSession) -> None:
    """More than 32 members: a binary search in Java string order (supplementary
    characters sort before U+E000..U+FFFF there, unlike in UTF-8 byte order)."""
    keys = [*UNICODE_KEYS, *(f"k{i:02}" for i in range(40))]
    big = {key: n for n, key in enumerate(keys)}
    small = {key: n for n, key in enumerate(UNICODE_KEYS)}
    events = [big, small, {"nested": big}, {"nested": [small, big]}]
    patterns = [{key: [n]} for n, key in enumerate(keys)]
    patterns += [{"nested": {key: [n]}} for n, key in enumerate(UNICODE_KEYS)]
    patterns += [{"k99": [{"exists": False}]}, {"𝄞": [7], "\ue000": [3]}]
    assert_all_agree(spark, events, patterns)


def test_several_fields_and_several_rules(spark: SparkSession) -> None:
    pattern = {
        "source": [{"prefix": "shop"}],
        "data": {"total": [{"numeric": [">", 100]}], "items": {"sku": ["a"], "qty": [2]}},
        "$or": [
            {"type": ["placed"], "data": {"coupon": [{"exists": False}]}},
            {"type": ["paid"], "data": {"total": [{"numeric": [">", 140]}]}},
            {"tenant": [{"exists": True}]},
        ],
    }
    base = {"source": "shop/1", "data": {"total": 150, "items": [{"sku": "a", "qty": 2}]}}
    events = [
        {**base, "type": "placed"},
        {**base, "type": "placed", "data": {**base["data"], "coupon": "X"}},
        {**base, "type": "paid"},
        {**base, "type": "paid", "data": {**base["data"], "items": [{"sku": "a", "qty": 2},
                                                                   {"sku": "b", "qty": 9}]}},
        {**base, "type": "other", "tenant": "acme"},
        {**base, "type": "placed", "source": "web"},
        {**base, "type": "placed", "data": {"total": 150, "items": [{"sku": "a"}, {"qty": 2}]}},
    ]  # fmt: skip
    compiled = compile_pattern(pattern)
    assert len(compiled.rules) == 3
    sql = native_pattern_sql(compiled, lambda key: f"`{key}`")
    assert sql.count("matches(") == 3 + 3 + 3  # per rule: source, data, type or tenant
    assert_all_agree(spark, events, [pattern])
    assert [matches(pattern, e) for e in events] == [True, False, True, True, True, False, False]


def test_a_large_pattern_stays_a_small_expression(spark: SparkSession) -> None:
    """64 rules (the limit) compile to 64 x 2 calls; analysis and optimization stay quick."""
    pattern = {"$or": [{"a": [f"x{i}"], "b": {"c": [i]}} for i in range(64)]}
    frame = spark.createDataFrame([('{"a": "x7", "b": {"c": 7}}',)], "event string")
    frame = frame.withColumn("v", F.parse_json("event"))
    kept = filter_by_pattern(frame, pattern, partial(native.field, "v"), native_reads=True)
    plan = kept._jdf.queryExecution().optimizedPlan().toString()
    assert plan.count("MatchesFunction.invoke") == 128 and "lambda" not in plan
    assert kept.count() == 1


def test_a_session_lower_casing_without_icu_filters_with_builtin_expressions(
    spark: SparkSession,
) -> None:
    """``matches`` lower-cases as ``lower()`` does by default (ICU case mappings): a session
    that turned them off gets the built-in predicate, whose ``lower()`` follows the setting."""
    frame = spark.createDataFrame([('{"a": "X"}',)], "event string")
    pattern = {"a": [{"equals-ignore-case": "x"}]}
    spark.conf.set("spark.sql.icu.caseMappings.enabled", "false")
    try:
        kept = filter_events(frame, pattern)
        assert "Matches" not in kept._jdf.queryExecution().optimizedPlan().toString()
        assert kept.count() == 1
        with pytest.raises(RuntimeError, match="caseMappings"):
            filter_events(frame, pattern, native_reads=True)
    finally:
        spark.conf.unset("spark.sql.icu.caseMappings.enabled")
    assert (
        "Matches" in filter_events(frame, pattern)._jdf.queryExecution().optimizedPlan().toString()
    )


# -- the steps' JSON -------------------------------------------------------------------------


def test_steps_json_is_the_documented_format() -> None:
    rule = compile_pattern(
        {"data": {"n": [{"numeric": [">", 1, "<=", 2]}, 5], "s": [{"exists": False}],
                  "t": [{"prefix": {"equals-ignore-case": "É"}}, {"cidr": "10.0.0.0/31"},
                        {"anything-but": {"wildcard": "a*\\*"}}, None, "x"]}}
    ).rules[0]  # fmt: skip
    steps = [(step.path[1:], step) for step in rule.steps]
    assert json.loads(steps_json(steps)) == [
        {"path": ["n"], "matchers": [{"numeric": [1.0, False, 2.0, True]}, {"number": 5.0}]},
        {"path": ["s"], "absent": True},
        {
            "path": ["t"],
            "matchers": [
                {"prefix-ignore-case": "É"},
                {"ip": ["4:0A000000", "4:0A000001"]},
                {"anything-but": [{"wildcard": ["a", "*"]}]},
                {"literal": None},
                {"string": "x"},
            ],
        },
    ]
    assert steps_json(steps).isascii()


def test_malformed_steps_are_refused(spark: SparkSession) -> None:
    frame = spark.sql("SELECT parse_json('1') AS v")
    for steps in ("nope", "{}", '[{"path": ["a"]}]', '[{"path": [], "matchers": [{"x": 1}]}]'):
        with pytest.raises(Exception, match="matches: "):
            frame.select(F.expr(native.matches("v", steps))).collect()


# -- random cases ----------------------------------------------------------------------------

KEYS = ["a", "b", "é", "a.b"]
SCALARS: list[Any] = [
    "x", "X", "xy", "Été", "été", "ΟΔΟΣ", "", "10.0.0.1", "2001:db8::1", "::ffff:a00:1",
    "x*y", "y" * 70, 0, -0.0, 1, 1.0, 1.5, 100.25, 1e300, 12345678901234567890123,
    True, False, None,
]  # fmt: skip
OPERATORS = [
    lambda: "x",
    lambda: "y" * 70,
    lambda: 1,
    lambda: 100.25,
    lambda: None,
    lambda: False,
    lambda: {"prefix": "x"},
    lambda: {"suffix": {"equals-ignore-case": "Y"}},
    lambda: {"prefix": {"equals-ignore-case": "éT"}},
    lambda: {"equals-ignore-case": "οδος"},
    lambda: {"wildcard": "x\\**"},
    lambda: {"wildcard": "*y*"},
    lambda: {"anything-but": ["x", "X", "xy", "", "a", "b", "c", "d", "e", "f"]},
    lambda: {"anything-but": [1, 0]},
    lambda: {"anything-but": {"suffix": "y"}},
    lambda: {"anything-but": {"equals-ignore-case": ["x", "été"]}},
    lambda: {"numeric": [">", 0, "<=", 1.5]},
    lambda: {"numeric": [">=", 100]},
    lambda: {"exists": True},
    lambda: {"exists": False},
    lambda: {"exists": False},
    lambda: {"cidr": "10.0.0.0/8"},
    lambda: {"cidr": "2001:db8::/32"},
]
RANDOM = RandomPatterns(
    KEYS, SCALARS, OPERATORS, scalar_share=0.4, object_share=0.7, min_object_keys=0, or_share=0.2
)


def test_the_native_matcher_agrees_with_the_evaluator_on_random_cases(spark: SparkSession) -> None:
    rnd = random.Random(20261126)
    events = [
        {key: RANDOM.value(rnd) for key in rnd.sample(KEYS, rnd.randint(1, 4))} for _ in range(400)
    ]
    patterns = [RANDOM.pattern(rnd) for _ in range(60)]
    assert_all_agree(spark, events, patterns)
    outcomes = [sum(matches(p, e) for e in events) for p in patterns]
    assert sum(0 < n < len(events) for n in outcomes) >= 20
