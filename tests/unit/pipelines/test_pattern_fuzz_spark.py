"""Differential fuzzing of the event-pattern matchers: every generated (pattern, event) pair
is decided by each matcher a user's event can meet, and they must all agree.

* the Python evaluator (``pipelines.spec.patterns.matches``): the REST API's test-pattern
  endpoint and the reference;
* the Spark path with Sluice's functions (``matches``, ``EventPatterns.java``): a filter;
* the Spark path without them (built-in SQL, :func:`pipelines.patterns.pattern_sql`), and
  its lambda-free quick form where it decides (:func:`quick_pattern_sql`);
* the bus router (``route``, ``Routes.java``, :func:`pipelines.patterns.route_plans`): all
  the patterns as the rules of one bus, exact values looked up in its index.

Patterns and events come from Hypothesis (``tests/support/pattern_strategies.py``: every
operator, paths four deep, missing middles, arrays nested past the searched depth, and events
built near each pattern so that many match it or miss it by one field). They are drawn first
and decided in bulk, the full cross product a chunk of patterns at a time in one Spark query:
over 100,000 cases as documents, some 30,000 more as channels hold events (CloudEvents columns),
in about 90 s. Each disagreement is reported as its pattern, its event and the answers.

``SLUICE_FUZZ_SEED=<n>`` draws another set (the default is Hypothesis' derandomized one,
the same in every run); ``SLUICE_FUZZ_SCALE=<k>`` draws k times the events.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import native
from pipelines.bus import routing_column
from pipelines.cloudevents import attribute_sql
from pipelines.patterns import (
    ChildAccessor,
    native_pattern_sql,
    pattern_sql,
    quick_pattern_sql,
    route_plans,
    variant_child,
)
from pipelines.spec.patterns import compile_pattern, matches
from pipelines.spec.patterns.evaluator import matches_compiled
from pipelines.spec.patterns.model import CompiledPattern
from tests.support import pattern_strategies
from tests.unit.pipelines.event_rows import events_frame, json_forms

pytestmark = [
    pytest.mark.spark,
    # the strategies are large composites; Hypothesis warns when it writes their repr
    pytest.mark.filterwarnings("ignore:Generating overly large repr"),
]

PATTERNS = 300
EVENTS = 100 * int(os.environ.get("SLUICE_FUZZ_SCALE", "1"))
"""Patterns drawn with one or two events near each; and random events besides."""
CHUNK = 75
"""Patterns decided per Spark query by Sluice's functions (a column each, and the router)."""

CLOUDEVENT_PATTERNS = 150
CLOUDEVENTS = 60

BUILTIN_PATTERNS = 30
BUILTIN_CHUNK = 10
BUILTIN_MAX_SQL = 12_000
"""The built-in SQL path (sessions without Sluice's jar) is decided for the first patterns
whose SQL is at most this long, a few per query: its text averages some 27 KB a pattern
here, and parsing 40 of them in one projection ran the test session's 1 GiB heap out (in the
full suite, the parser's cache of earlier tests' SQL took the rest; the session flushes that
cache now, ``pipelines.sql_guard.HARDENED_CONF``)."""


def drawn(strategy: st.SearchStrategy[Any], count: int) -> list[Any]:
    """``count`` examples of ``strategy`` as Hypothesis generates them (no duplicates)."""
    values: dict[str, Any] = {}

    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        derandomize="SLUICE_FUZZ_SEED" not in os.environ,
        phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(value: Any) -> None:
        values.setdefault(json.dumps(value, sort_keys=True), value)

    if "SLUICE_FUZZ_SEED" in os.environ:
        collect = seed(int(os.environ["SLUICE_FUZZ_SEED"]))(collect)
    collect()
    return list(values.values())


Columns = tuple[dict[str, str], dict[str, list[Column]]]
"""Columns computed first (name -> SQL, in order), then per matcher a column per pattern."""


def renamed(sql: str, bindings: dict[str, str], prefix: str) -> tuple[str, dict[str, str]]:
    """A quick predicate with its bound columns renamed ``<prefix>_<name>`` (so that many
    patterns' quick predicates fit in one projection without their names clashing)."""

    def rename(text: str) -> str:
        return re.sub(r"`(__sluice_q\d+)`", rf"`{prefix}_\1`", text)

    return rename(sql), {f"{prefix}_{name}": rename(value) for name, value in bindings.items()}


def native_columns(compiled: list[CompiledPattern], child: ChildAccessor) -> Columns:
    """Sluice's functions: a ``matches`` predicate per pattern, and the patterns as one bus's
    rules (rule i's target is i) routed as a bus routes: a ``route`` call per top-level
    member, ``CASE WHEN`` for the rest (one column)."""
    plans, rest = route_plans([(c, [i]) for i, c in enumerate(compiled)])
    routes = [F.expr(native.route(child(plan.member), plan.routes)) for plan in plans]
    if rest:
        others = [(F.expr(native_pattern_sql(compiled[i], child)), [i]) for i in rest]
        routes.append(routing_column(others))
    return {}, {
        "native": [F.expr(native_pattern_sql(c, child)) for c in compiled],
        "route": [F.concat(*routes) if routes else F.array().cast("array<int>")],
    }


def builtin_columns(compiled: list[CompiledPattern], child: ChildAccessor) -> Columns:
    """Built-in SQL only: the full predicate per pattern, and the quick one where it
    decides (as :func:`pipelines.patterns.filter_by_pattern` applies them)."""
    full = [F.expr(pattern_sql(c, child)) for c in compiled]
    bindings: dict[str, str] = {}
    quick = []
    for n, (c, predicate) in enumerate(zip(compiled, full, strict=True)):
        fast = quick_pattern_sql(c, child)
        if fast is None:
            quick.append(predicate)
            continue
        sql, bound = renamed(fast.sql, fast.bindings, f"p{n}")
        bindings.update(bound)
        quick.append(F.coalesce(F.expr(sql), predicate))
    return bindings, {"builtin": full, "quick": quick}


Matchers = Callable[[list[CompiledPattern], ChildAccessor], Columns]


def decide(
    frame: DataFrame, compiled: list[CompiledPattern], columns: Matchers, child: ChildAccessor
) -> dict[str, list[set[int]]]:
    """Per matcher, per pattern: the ``i`` of the rows of ``frame`` it matches (one query)."""
    bindings, by_matcher = columns(compiled, child)
    for name, sql in bindings.items():
        frame = frame.withColumn(name, F.expr(sql))
    selected = [F.col("i")]
    for name, cols in by_matcher.items():
        selected += [c.alias(f"{name}{n}") for n, c in enumerate(cols)]
    rows = frame.select(*selected).collect()
    decided = {
        name: [{row.i for row in rows if row[f"{name}{n}"]} for n in range(len(compiled))]
        for name in by_matcher
        if name != "route"
    }
    if "route" in by_matcher:
        decided["route"] = [set() for _ in compiled]
        for row in rows:
            targets = [t for t in row.route0 if t is not None]
            assert len(targets) == len(set(targets)), "a rule's target twice for one event"
            for target in targets:
                decided["route"][target].add(row.i)
    return decided


def disagreements(
    frame: DataFrame,
    events: list[dict[str, Any]],
    patterns: list[Any],
    matchers: tuple[Matchers, ChildAccessor],
    chunk: int,
) -> list[str]:
    """Where the ``matchers`` (reading the top-level members with the accessor given) and the
    evaluator disagree on the rows of ``frame`` (row ``i`` is ``events[i]``, in its JSON
    form), at most 3 events per pattern and matcher."""
    found: list[str] = []
    for start in range(0, len(patterns), chunk):
        some = patterns[start : start + chunk]
        compiled = [compile_pattern(p) for p in some]
        decided = decide(frame, compiled, *matchers)
        for n, (pattern, c) in enumerate(zip(some, compiled, strict=True)):
            want = {i for i, e in enumerate(events) if matches_compiled(c, e)}
            for name, per_pattern in decided.items():
                got = per_pattern[n]
                found += [
                    f"{name} says {i in got}, the evaluator {i in want}: "
                    f"pattern {json.dumps(pattern)} event {json.dumps(events[i])}"
                    for i in sorted(want ^ got)[:3]
                ]
    return found


def documents(spark: SparkSession, events: list[dict[str, Any]]) -> DataFrame:
    """``(i, event, v)``: each event as JSON text and parsed into a VARIANT ``v``."""
    rows = [(i, json.dumps(e)) for i, e in enumerate(events)]
    frame = spark.createDataFrame(rows, "i int, event string")
    return frame.withColumn("v", F.parse_json("event")).cache()


def test_the_matchers_agree_on_generated_patterns_and_events(spark: SparkSession) -> None:
    assert native.native_functions(spark)  # the test session has the jar
    cases = drawn(pattern_strategies.cases, PATTERNS)
    patterns = [pattern for pattern, _ in cases]
    events = [*drawn(pattern_strategies.events, EVENTS), *(e for _, near in cases for e in near)]
    frame = documents(spark, events)
    sluice = (native_columns, partial(native.field, "`v`"))
    found = disagreements(frame, events, patterns, sluice, CHUNK)
    builtin_child = partial(variant_child, "`v`")
    small = [
        p
        for p in patterns
        if len(pattern_sql(compile_pattern(p), builtin_child)) <= BUILTIN_MAX_SQL
    ][:BUILTIN_PATTERNS]
    found += disagreements(frame, events, small, (builtin_columns, builtin_child), BUILTIN_CHUNK)
    frame.unpersist()
    assert not found, f"{len(found)} disagreements:\n" + "\n".join(found[:20])
    decided = len(patterns) * len(events)
    assert decided >= 100_000, (len(patterns), len(events))
    matched, split, near = not_trivial(patterns, events, cases)
    print(
        f"{decided} cases (and {len(small) * len(events)} on the built-in path): "
        f"{matched} matches, {split} of {len(patterns)} patterns split the events, "
        f"{near:.0%} of the events near a pattern match it"
    )


def test_the_filter_and_the_bus_agree_on_generated_cloudevents(spark: SparkSession) -> None:
    """The same on events as channels hold them (``pipelines.cloudevents`` columns, read
    with :func:`attribute_sql`, as the filter transform and a bus read them): payloads as
    ``data`` (or none), extensions whose names the patterns' top-level fields take."""
    assert native.native_functions(spark)
    cases = drawn(pattern_strategies.cloudevent_cases, CLOUDEVENT_PATTERNS)
    patterns = [pattern for pattern, _ in cases]
    events = [
        *drawn(pattern_strategies.cloudevents, CLOUDEVENTS),
        *(e for _, near in cases for e in near),
    ]
    frame = events_frame(spark, events).withColumn("i", F.col("origin_offset").cast("int"))
    frame = frame.cache()
    forms = json_forms(frame)
    found = disagreements(frame, forms, patterns, (native_columns, attribute_sql), CHUNK)
    frame.unpersist()
    assert not found, f"{len(found)} disagreements:\n" + "\n".join(found[:20])
    near_forms = forms[CLOUDEVENTS:]
    near_cases = []
    for pattern, near in cases:
        near_cases.append((pattern, near_forms[: len(near)]))
        near_forms = near_forms[len(near) :]
    matched, split, near_share = not_trivial(patterns, forms, near_cases)
    print(
        f"{len(patterns) * len(forms)} cases: {matched} matches, {split} of {len(patterns)} "
        f"patterns split the events, {near_share:.0%} of the events near a pattern match it"
    )


def not_trivial(
    patterns: list[Any], events: list[Any], cases: list[tuple[Any, list[Any]]]
) -> tuple[int, int, float]:
    """Checks that the cases are not trivially decided; returns how many match, how many
    patterns split the events, and the share of the events near a pattern that match it."""
    expected = [[matches_compiled(compile_pattern(p), e) for e in events] for p in patterns]
    matched = sum(map(sum, expected))
    split = sum(0 < sum(m) < len(events) for m in expected)
    near = [matches(pattern, event) for pattern, events in cases for event in events]
    assert matched >= 2 * len(patterns) and split > len(patterns) / 3, (matched, split)
    assert 0.1 < sum(near) / len(near) < 0.9, sum(near) / len(near)
    return matched, split, sum(near) / len(near)


def test_absence_deep_below_a_missing_middle_under_every_attribute(spark: SparkSession) -> None:
    """The review's finding: ``exists: false`` deep in a path whose middle is absent, on
    payloads and on attributes (a string attribute has no members, ``time`` is written as
    text, an extension may hold an object), with every matcher but the router given the
    same answer as the evaluator."""
    assert native.native_functions(spark)
    payloads = [{"a": 1}, {"a": {"b": 1}}, {"a": {"b": {"c": 1}}}, {"a": {"x": 1}}, {"a": None}]
    payloads += [{"a": [1, {"b": {}}]}, {"a": []}, None, "text", [1, 2], [{"a": {"b": {}}}], {}]
    events: list[dict[str, Any]] = [{"data": p} for p in payloads] + [{}, {"subject": "s"}]
    events += [{"extensions": {"ext": v}, "data": {"a": 1}} for v in ["s", 1, {"a": {"b": 1}}]]
    paths = [
        ["data", "a", "b", "c"],
        ["data", "a", "b"],
        ["data", "x", "y"],
        ["source", "x", "y"],
        ["time", "x", "y"],
        ["ext", "a", "b"],
        ["ext", "x", "y"],
        ["subject", "x", "y"],
        ["nosuch", "x", "y"],
        ["id", "a", "b", "c"],
    ]

    def along(path: list[str], leaf: list[Any]) -> dict[str, Any]:
        pattern: Any = leaf
        for key in reversed(path):
            pattern = {key: pattern}
        return pattern

    patterns = [along(path, [{"exists": False}]) for path in paths]
    patterns += [
        {**along(path, [{"exists": False}]), "type": ["sluice.kafka.record"]} for path in paths
    ]
    patterns += [along(path, [{"anything-but": "zz"}]) for path in paths]
    frame = events_frame(spark, events).withColumn("i", F.col("origin_offset").cast("int"))
    forms = json_forms(frame)
    found = disagreements(frame, forms, patterns, (native_columns, attribute_sql), len(patterns))
    found += disagreements(frame, forms, patterns, (builtin_columns, attribute_sql), 10)
    assert not found, "\n".join(found)
    assert sum(matches(p, e) for p in patterns for e in forms) > len(patterns)
