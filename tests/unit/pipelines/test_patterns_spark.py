"""Event patterns compiled to native Spark predicates, checked against the Python evaluator."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial, reduce
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import native
from pipelines.patterns import filter_events, pattern_predicate, variant_child
from pipelines.spec.patterns import PatternError, matches
from tests.support.conformance import load_conformance
from tests.support.random_patterns import RandomPatterns

pytestmark = pytest.mark.spark

VECTORS: list[dict[str, Any]] = load_conformance()["vectors"]


def events_frame(spark: SparkSession, events: list[Any]) -> DataFrame:
    """A cached one-partition DataFrame ``(i, event)`` holding each event as JSON text."""
    rows = [
        (i, None if e is None else e if isinstance(e, str) else json.dumps(e))
        for i, e in enumerate(events)
    ]
    frame = spark.createDataFrame(rows, "i int, event string").coalesce(1).cache()
    frame.count()
    return frame


def vectors_by_pattern() -> list[tuple[Any, list[int]]]:
    """Each distinct pattern of the conformance vectors, with the indexes of its vectors."""
    by_pattern: dict[str, list[int]] = {}
    for index, vector in enumerate(VECTORS):
        by_pattern.setdefault(json.dumps(vector["pattern"], sort_keys=True), []).append(index)
    return [(VECTORS[indexes[0]]["pattern"], indexes) for indexes in by_pattern.values()]


def matching_rows(frame: DataFrame, pattern: Any, native_reads: bool | None = None) -> set[int]:
    matched = filter_events(frame, pattern, native_reads=native_reads)
    return {row.i for row in matched.select("i").collect()}


READS = [pytest.param(True, id="native"), pytest.param(False, id="builtin")]
"""``native_reads`` of the filter: Sluice's ``matches`` function (``native``), or built-in
expressions only (``builtin``: the quick predicate, then the full one); and of the quick
predicate alone: values read with Sluice's functions or with built-in ones."""


@pytest.fixture(scope="module", params=READS)
def conformance_results(spark: SparkSession, request: pytest.FixtureRequest) -> dict[str, bool]:
    """Whether ``filter_events`` keeps each vector's event, matching with Sluice's
    ``matches`` function (``native``) or with built-in expressions (``builtin``).

    One query: for each distinct pattern, ``filter_events`` over the events of the vectors
    sharing it, the 104 filters' rows put together with ``unionByName``. (A query per pattern
    spent about 80 s on two cores in Spark's per-job overhead, not in matching.)
    """
    frame = events_frame(spark, [vector["event"] for vector in VECTORS])
    matched = [
        filter_events(frame.filter(F.col("i").isin(indexes)), pattern, native_reads=request.param)
        for pattern, indexes in vectors_by_pattern()
    ]
    kept = {row.i for row in reduce(DataFrame.unionByName, matched).select("i").collect()}
    frame.unpersist()
    return {vector["id"]: index in kept for index, vector in enumerate(VECTORS)}


@pytest.mark.parametrize("vector", VECTORS, ids=[v["id"] for v in VECTORS])
def test_conformance_vector(conformance_results: dict[str, bool], vector: dict[str, Any]) -> None:
    assert conformance_results[vector["id"]] is vector["matches"], vector["note"]


@pytest.mark.parametrize("native_reads", READS)
def test_filter_events_keeps_columns_and_drops_unreadable_rows(
    spark: SparkSession, native_reads: bool
) -> None:
    frame = events_frame(spark, [{"a": []}, None, "{not json", '["a"]', '"a"', {"b": 1}])
    kept = filter_events(frame, {"a": [{"exists": False}]}, native_reads=native_reads)

    assert kept.columns == ["i", "event"]
    assert sorted(row.i for row in kept.collect()) == [0, 5]  # only JSON objects can match


def test_invalid_pattern_raises_before_spark_sees_it(spark: SparkSession) -> None:
    frame = spark.createDataFrame([("{}",)], "event string")
    with pytest.raises(PatternError, match="unknown operator"):
        filter_events(frame, {"a": [{"contains": "x"}]})


QUOTED = 'it\'s "quoted" \\ back%slash_!'
AWKWARD_EVENTS = [
    {QUOTED: QUOTED, "k": "o'k", "w": "50%_off!", "u": "Été"},
    {"it's": {'say "hi"': ["x\\y"]}, "w": "50 off", "u": "ETE"},
    {"a.b": 1, "a": {"b": 2}, "$or": "literal"},
]
AWKWARD_PATTERNS = [
    {QUOTED: [QUOTED]},
    {"k": [{"prefix": "o'"}]},
    {"w": [{"wildcard": "50%_*!"}]},
    {"w": [{"wildcard": "50*off"}]},
    {"u": [{"equals-ignore-case": "été"}]},
    {"it's": {'say "hi"': [{"suffix": "\\y"}]}},
    {"a.b": [1]},
    {"a": {"b": [2]}},
]


@contextmanager
def spark_conf(spark: SparkSession, key: str, value: str) -> Iterator[None]:
    previous = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, previous)


@pytest.mark.parametrize("native_reads", READS)
@pytest.mark.parametrize("escaped_literals", ["false", "true"])
def test_keys_and_values_need_no_escaping(
    spark: SparkSession, escaped_literals: str, native_reads: bool
) -> None:
    frame = events_frame(spark, AWKWARD_EVENTS)
    with spark_conf(spark, "spark.sql.parser.escapedStringLiterals", escaped_literals):
        for pattern in AWKWARD_PATTERNS:
            expected = {i for i, event in enumerate(AWKWARD_EVENTS) if matches(pattern, event)}
            assert expected, pattern
            assert matching_rows(frame, pattern, native_reads) == expected, pattern


# -- differential testing: random patterns and events, Python evaluator vs Spark ----------

KEYS = ["a", "b", "c"]
SCALARS: list[Any] = ["x", "y", "xy", "", 1, 2, 2.0, -0.5, True, False, None, "10.0.0.1"]
OPERATORS = [
    lambda: "x",
    lambda: 2,
    lambda: None,
    lambda: True,
    lambda: {"prefix": "x"},
    lambda: {"suffix": {"equals-ignore-case": "Y"}},
    lambda: {"wildcard": "x*"},
    lambda: {"anything-but": "x"},
    lambda: {"anything-but": [1, 2]},
    lambda: {"anything-but": {"prefix": "x"}},
    lambda: {"numeric": [">", 0, "<=", 2]},
    lambda: {"exists": True},
    lambda: {"exists": False},
    lambda: {"cidr": "10.0.0.0/8"},
]


RANDOM = RandomPatterns(
    KEYS,
    SCALARS,
    OPERATORS,
    scalar_share=0.45,
    object_share=0.75,
    min_object_keys=0,
    or_share=0.15,
)


@pytest.mark.parametrize("native_matching", READS)
def test_spark_agrees_with_the_python_evaluator_on_random_cases(
    spark: SparkSession, native_matching: bool
) -> None:
    rnd = random.Random(20240601)
    events = [
        {key: RANDOM.value(rnd) for key in rnd.sample(KEYS, rnd.randint(1, 3))} for _ in range(150)
    ]
    patterns = [RANDOM.pattern(rnd) for _ in range(12)]
    frame = events_frame(spark, events).withColumn("v", F.parse_json("event"))
    # One query evaluates every pattern (the conformance test covers filter_events itself).
    child = partial(native.field, "v") if native_matching else partial(variant_child, "v")
    predicates = [pattern_predicate(p, child, native_matching=native_matching) for p in patterns]
    rows = frame.select("i", *(c.alias(f"p{n}") for n, c in enumerate(predicates))).collect()
    for n, pattern in enumerate(patterns):
        expected = {i for i, event in enumerate(events) if matches(pattern, event)}
        assert {row.i for row in rows if row[f"p{n}"]} == expected, json.dumps(pattern)
    interesting = [p for p in patterns if 0 < sum(matches(p, e) for e in events) < len(events)]
    assert len(interesting) >= 6  # the cases are not trivially all-or-nothing


IP_TEXTS = [
    "10.0.0.1", "255.255.255.255", "256.0.0.1", "010.0.0.1", "1.2.3", "1.2.3.4.5", " 10.0.0.1",
    "10.0.0.1\n", "::", "::1", "1::", "2001:DB8::1", "2001:db8:0:0:0:0:0:1", "1:2:3:4:5:6:7:8",
    "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "1:2:3:4::5:6:7:8", "1::2::3", ":1::2", "1:::2",
    "12345::1", "::ffff:a00:1", "::ffff:10.0.0.1", "g::1", "",
]  # fmt: skip
IP_PATTERNS = [
    {"ip": [{"cidr": "0.0.0.0/0"}]},
    {"ip": [{"cidr": "::/0"}]},
    {"ip": [{"cidr": "2001:db8::/127"}]},
    {"ip": [{"cidr": "10.0.0.0/31"}]},
    {"ip": ["::1"]},
]


@pytest.mark.parametrize("native_reads", READS)
def test_ip_addresses_are_read_like_the_python_evaluator(
    spark: SparkSession, native_reads: bool
) -> None:
    events = [{"ip": text} for text in IP_TEXTS]
    frame = events_frame(spark, events)
    for pattern in IP_PATTERNS:
        expected = {i for i, event in enumerate(events) if matches(pattern, event)}
        assert matching_rows(frame, pattern, native_reads) == expected, pattern


@pytest.mark.parametrize("native_reads", READS)
def test_arrays_of_arrays_are_searched_three_levels_deep(
    spark: SparkSession, native_reads: bool
) -> None:
    events = [{"a": [[["x"]]]}, {"a": [[[["x"]]]]}, {"a": [[{"b": [[["x"]]]}]]}]
    pattern = {"a": ["x"]}
    assert [matches(pattern, event) for event in events] == [True, False, False]
    frame = events_frame(spark, events)
    assert matching_rows(frame, pattern, native_reads) == {0}
    assert matching_rows(frame, {"a": {"b": ["x"]}}, native_reads) == {2}


@pytest.mark.parametrize("native_reads", READS)
def test_the_quick_predicate_never_contradicts_the_full_one(
    spark: SparkSession, native_reads: bool
) -> None:
    """``filter_by_pattern`` trusts the lambda-free quick predicate whenever it is not NULL:
    on every conformance vector it must then say what the full predicate says."""
    assert native.native_functions(spark)  # the test session has Sluice's jar
    from pipelines.patterns import pattern_sql, quick_pattern_sql
    from pipelines.spec.patterns import compile_pattern

    frame = events_frame(spark, [vector["event"] for vector in VECTORS]).withColumn(
        "_ev", F.try_parse_json("event")
    )
    answers = []
    for pattern, indexes in vectors_by_pattern():
        compiled = compile_pattern(pattern)
        child = partial(variant_child, "`_ev`")
        quick = quick_pattern_sql(compiled, child, native_reads=native_reads)
        if quick is None:
            continue
        rows = frame.filter(F.col("i").isin(indexes))
        for name, sql in quick.bindings.items():
            rows = rows.withColumn(name, F.expr(sql))
        answers.append(
            rows.select(
                "i",
                F.expr(quick.sql).alias("quick"),
                F.expr(pattern_sql(compiled, child)).alias("full"),
            )
        )
    decided = 0
    for row in reduce(DataFrame.unionByName, answers).collect():  # one query, as above
        if row.quick is not None:
            decided += 1
            assert row.quick == row.full, VECTORS[row.i]["id"]
    assert decided > len(VECTORS) // 2  # the quick path really decides most events


@pytest.mark.parametrize("native_reads", READS)
def test_the_quick_predicate_agrees_with_the_python_evaluator_on_random_cases(
    spark: SparkSession, native_reads: bool
) -> None:
    """The quick predicate tells most values' kinds without a type name (natively: a
    string by its text, a number by its DOUBLE): on random events holding numbers, 0 and 1,
    booleans, numeric strings, nulls, arrays and objects, wherever it decides it must say
    what the evaluator says."""
    from pipelines.patterns import quick_pattern_sql

    assert native.native_functions(spark)
    from pipelines.spec.patterns import compile_pattern

    rnd = random.Random(20261121)
    scalars: list[Any] = [0, 1, 0.0, 1.0, -0.0, 2, 150.5, 1e300, True, False, None, "1", "0", "x"]
    events = [
        {key: rnd.choice([*scalars, [rnd.choice(scalars)], {"a": rnd.choice(scalars)}])
         for key in rnd.sample(KEYS, rnd.randint(1, 3))}
        for _ in range(300)
    ]  # fmt: skip
    operators = [
        lambda: 1, lambda: 0, lambda: "1", lambda: True, lambda: None,
        lambda: {"numeric": [">", 0]}, lambda: {"numeric": ["=", 1]},
        lambda: {"numeric": ["<", 1]}, lambda: {"anything-but": [0, 1]},
        lambda: {"anything-but": "1"}, lambda: {"prefix": "1"}, lambda: {"exists": True},
        lambda: {"exists": False}, lambda: {"equals-ignore-case": "X"}, lambda: {"wildcard": "*"},
    ]  # fmt: skip
    patterns = [
        {key: [rnd.choice(operators)() for _ in range(rnd.randint(1, 2))]
         for key in rnd.sample(KEYS, rnd.randint(1, 2))}
        for _ in range(16)
    ]  # fmt: skip
    frame = events_frame(spark, events).withColumn("_ev", F.parse_json("event"))
    child = partial(variant_child, "`_ev`")
    decided = 0
    for pattern in patterns:
        quick = quick_pattern_sql(compile_pattern(pattern), child, native_reads=native_reads)
        assert quick is not None
        rows = frame
        for name, sql in quick.bindings.items():
            rows = rows.withColumn(name, F.expr(sql))
        for row in rows.select("i", F.expr(quick.sql).alias("quick")).collect():
            if row.quick is not None:
                decided += 1
                assert row.quick == matches(pattern, events[row.i]), (pattern, events[row.i])
    assert decided > len(events) * len(patterns) // 2
