"""Wildcards on the Spark path: no regular expression, linear time, the Python matcher's
answers (issue 12, finding 5).

Before, a wildcard compiled to ``LIKE``, which Spark runs with Java's backtracking regex
engine: ``*a*a*a*b`` (4 stars) on 1,000 characters took 223 s in a filter, and the issue's
20 stars on 5,000 characters never finished.
"""

from __future__ import annotations

import json
import random
import time
from functools import partial

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines import native
from pipelines.patterns import (
    filter_events,
    pattern_predicate,
    pattern_sql,
    quick_pattern_sql,
    variant_child,
    wildcard_sql,
)
from pipelines.spec.patterns import compile_pattern, matches
from pipelines.spec.patterns.parser import wildcard_segments
from tests.unit.pipelines.test_pattern_linear_time import (
    ATTACK_TEXT,
    ATTACK_WILDCARD,
    random_text,
    random_wildcard,
)

pytestmark = pytest.mark.spark

ATTACK_EVENTS = [
    {"a": ATTACK_TEXT},
    {"a": ATTACK_TEXT + "b"},
    {"a": ["x", ATTACK_TEXT + "b"]},  # in an array: decided by the full (lambda) predicate
    {"a": ["x", ATTACK_TEXT]},
]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("native_reads", [True, False], ids=["native", "builtin"])
def test_the_issue_wildcard_attack_is_filtered_at_once(
    spark: SparkSession, native_reads: bool
) -> None:
    rows = [(i, json.dumps(event)) for i, event in enumerate(ATTACK_EVENTS)]
    frame = spark.createDataFrame(rows, "i int, event string").coalesce(1).cache()
    frame.count()
    pattern = {"a": [{"wildcard": ATTACK_WILDCARD}]}

    start = time.perf_counter()
    kept = {row.i for row in filter_events(frame, pattern, native_reads=native_reads).collect()}
    elapsed = time.perf_counter() - start
    frame.unpersist()

    assert kept == {i for i, event in enumerate(ATTACK_EVENTS) if matches(pattern, event)}
    assert kept == {1, 2}
    # a second or two (the JVM's work: this process's CPU time would not see it); the regex
    # took hours: a bound far from both that a busy machine cannot stretch the first past
    assert elapsed < 120


@pytest.mark.parametrize(
    "wildcard", [ATTACK_WILDCARD, "a*b", "*x*", "\\**\\\\", "it's*%_!*\\*", "exact"]
)
def test_wildcards_compile_without_regular_expressions(wildcard: str) -> None:
    compiled = compile_pattern({"a": [{"wildcard": wildcard}]})
    child = partial(variant_child, "v")
    sql = pattern_sql(compiled, child)
    quick = quick_pattern_sql(compiled, child, native_reads=True)
    assert quick is not None
    for text in (sql, quick.sql, *quick.bindings.values()):
        assert not any(word in text.lower() for word in (" like ", "rlike", "regexp")), text


def test_the_wildcard_sql_agrees_with_the_python_matcher_on_random_cases(
    spark: SparkSession,
) -> None:
    """Random wildcards (escapes included) and texts (instances of them, some altered), all
    evaluated in one query over a string column."""
    rnd = random.Random(20261124)
    wildcards = list(dict.fromkeys(random_wildcard(rnd) for _ in range(80)))
    texts = list(
        dict.fromkeys(random_text(rnd, wildcard) for wildcard in wildcards for _ in range(4))
    )
    frame = spark.createDataFrame(list(enumerate(texts)), "i int, t string")
    columns = [
        F.expr(wildcard_sql(wildcard_segments(wildcard), "t")).alias(f"w{n}")
        for n, wildcard in enumerate(wildcards)
    ]
    rows = {row.i: row for row in frame.select("i", *columns).collect()}

    checked = matched = 0
    for n, wildcard in enumerate(wildcards):
        for i, text in enumerate(texts):
            expected = matches({"v": [{"wildcard": wildcard}]}, {"v": text})
            assert rows[i][f"w{n}"] is expected, (wildcard, text)
            checked, matched = checked + 1, matched + expected
    assert checked > 5_000 and 100 < matched < checked // 2


def test_the_native_matcher_agrees_with_the_python_matcher_on_random_cases(
    spark: SparkSession,
) -> None:
    """The same random wildcards and texts through Sluice's ``matches`` (bytes of UTF-8 text
    instead of characters; escapes resolved by the parser, so segments hold ``*`` and ``\\``)."""
    assert native.native_functions(spark)
    rnd = random.Random(20261124)
    wildcards = list(dict.fromkeys(random_wildcard(rnd) for _ in range(80)))
    texts = list(
        dict.fromkeys(random_text(rnd, wildcard) for wildcard in wildcards for _ in range(4))
    )
    frame = spark.createDataFrame(list(enumerate(texts)), "i int, t string")
    columns = [
        pattern_predicate(
            {"v": [{"wildcard": wildcard}]}, lambda _: "CAST(t AS VARIANT)", native_matching=True
        ).alias(f"w{n}")
        for n, wildcard in enumerate(wildcards)
    ]
    rows = {row.i: row for row in frame.select("i", *columns).collect()}

    matched = 0
    for n, wildcard in enumerate(wildcards):
        for i, text in enumerate(texts):
            expected = matches({"v": [{"wildcard": wildcard}]}, {"v": text})
            assert rows[i][f"w{n}"] is expected, (wildcard, text)
            matched += expected
    assert 100 < matched < len(wildcards) * len(texts) // 2
