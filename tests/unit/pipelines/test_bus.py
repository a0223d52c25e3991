"""A bus (a channel with rules) as real streaming queries: files source -> rules -> files and
JDBC (SQLite) targets; replays, live rule changes, the error policy, per-rule counts, and the
conformance vectors through rule patterns."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import native
from pipelines.builder import build_stream
from pipelines.bus import (
    build_bus_stream,
    compile_bus,
    group_producer_options,
    routing_column,
    rule_predicate,
)
from pipelines.patterns import route_plans, variant_child
from pipelines.spec import SpecError, validate_spec
from pipelines.spec.live import compiled_into_query, live_change
from pipelines.spec.patterns import compile_pattern
from tests.support.conformance import load_conformance

pytestmark = pytest.mark.spark

VECTORS: list[dict[str, Any]] = load_conformance()["vectors"]

ORDERS = [
    {"n": 1, "kind": "order", "amount": 50},
    {"n": 2, "kind": "order", "amount": 150},
    {"n": 3, "kind": "refund", "amount": 300},
    {"n": 4, "kind": "order", "amount": 101},
    {"n": 5, "kind": "ping"},
]


def files_sink(path: Path, content: str = "data") -> dict[str, Any]:
    return {"type": "files", "config": {"path": str(path), "format": "jsonl", "content": content}}


def sqlite_sink(path: Path, table: str = "events") -> dict[str, Any]:
    return {"type": "jdbc", "config": {"url": f"sqlite:///{path}", "table": table}}


def bus_spec(tmp_path: Path, rules: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    source = {"path": str(tmp_path / "in"), "format": "jsonl"}
    return {"source": {"type": "files", "config": source}, "rules": rules, **extra}


def standard_rules(tmp_path: Path) -> list[dict[str, Any]]:
    return [
        {
            "name": "big-orders",
            "pattern": {"data": {"kind": ["order"], "amount": [{"numeric": [">", 100]}]}},
            "sinks": [files_sink(tmp_path / "big"), sqlite_sink(tmp_path / "db.sqlite", "big")],
        },
        {
            "name": "refunds",
            "pattern": {"data": {"kind": ["refund"]}},
            "transforms": [{"type": "insert", "config": {"field": "data.flagged", "value": True}}],
            "sinks": [files_sink(tmp_path / "refunds")],
        },
        {"name": "everything", "sinks": [sqlite_sink(tmp_path / "db.sqlite", "all")]},
    ]


def drop(tmp_path: Path, name: str, records: list[dict[str, Any]]) -> None:
    inbox = tmp_path / "in"
    inbox.mkdir(exist_ok=True)
    (inbox / name).write_text("".join(json.dumps(r) + "\n" for r in records))


def run_bus(
    spark: SparkSession, tmp_path: Path, spec: dict[str, Any], counts: list[Any] | None = None
) -> None:
    writer = build_stream(
        spark,
        validate_spec(spec),
        channel="bus-test",
        checkpoint_dir=str(tmp_path / "checkpoint"),
        on_rule_counts=(lambda batch_id, c: counts.append((batch_id, c)))
        if counts is not None
        else None,
    )
    query = writer.start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()


def lines(spark: SparkSession, path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(row.value) for row in spark.read.text(str(path)).collect()]


def ns(records: list[dict[str, Any]]) -> list[int]:
    return sorted(record["n"] for record in records)


def table(path: Path, name: str) -> list[dict[str, Any]]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute(f'SELECT data FROM "{name}"').fetchall()
    return [json.loads(row[0])["data"] for row in rows]  # content: cloudevents


def test_each_target_gets_the_events_its_rule_matches(spark: SparkSession, tmp_path: Path) -> None:
    counts: list[Any] = []
    drop(tmp_path, "a.jsonl", ORDERS)
    run_bus(spark, tmp_path, bus_spec(tmp_path, standard_rules(tmp_path)), counts)

    assert ns(lines(spark, tmp_path / "big")) == [2, 4]
    assert ns(table(tmp_path / "db.sqlite", "big")) == [2, 4]
    refunds = lines(spark, tmp_path / "refunds")
    assert refunds == [{"n": 3, "kind": "refund", "amount": 300, "flagged": True}]
    assert ns(table(tmp_path / "db.sqlite", "all")) == [1, 2, 3, 4, 5]

    [batch] = [c for _, c in counts if any(r["matched"] for r in c)]
    by_rule = {rule["rule"]: rule for rule in batch}
    assert by_rule["big-orders"] == {
        "rule": "big-orders",
        "matched": 2,
        "delivered": 2,
        "failed": 0,
        "targets": [
            {"sink": "rules[0].sinks[0]", "type": "files", "delivered": 2, "failed": 0},
            {"sink": "rules[0].sinks[1]", "type": "jdbc", "delivered": 2, "failed": 0},
        ],
    }
    assert (by_rule["refunds"]["matched"], by_rule["refunds"]["delivered"]) == (1, 1)
    assert (by_rule["everything"]["matched"], by_rule["everything"]["delivered"]) == (5, 5)


def test_a_replayed_batch_writes_no_duplicate(spark: SparkSession, tmp_path: Path) -> None:
    spec = bus_spec(tmp_path, standard_rules(tmp_path))
    drop(tmp_path, "a.jsonl", ORDERS)
    run_bus(spark, tmp_path, spec)
    # As after a crash between writing the batch and committing it: the batch runs again.
    commits = sorted((tmp_path / "checkpoint" / "commits").glob("[0-9]*"))
    assert commits, "the batch was committed"
    commits[-1].unlink()
    (commits[-1].parent / f".{commits[-1].name}.crc").unlink(missing_ok=True)
    drop(tmp_path, "b.jsonl", [{"n": 6, "kind": "order", "amount": 999}])
    run_bus(spark, tmp_path, spec)

    assert ns(lines(spark, tmp_path / "big")) == [2, 4, 6]
    assert ns(table(tmp_path / "db.sqlite", "big")) == [2, 4, 6]
    assert ns(table(tmp_path / "db.sqlite", "all")) == [1, 2, 3, 4, 5, 6]
    assert ns(lines(spark, tmp_path / "refunds")) == [3]


def test_tolerance_all_a_target_down_does_not_stop_the_others(
    spark: SparkSession, tmp_path: Path
) -> None:
    (tmp_path / "down.sqlite").mkdir()  # a directory: SQLite cannot open it
    rules = standard_rules(tmp_path)
    rules[2]["sinks"] = [sqlite_sink(tmp_path / "down.sqlite", "all")]
    dlq = {
        "type": "files",
        "config": {**files_sink(tmp_path / "dlq")["config"], "content": "cloudevents"},
    }
    spec = bus_spec(tmp_path, rules, errors={"tolerance": "all", "dead_letter": dlq})
    counts: list[Any] = []
    dead: list[int] = []
    drop(tmp_path, "a.jsonl", [*ORDERS, {"broken": True}])
    (tmp_path / "in" / "b.jsonl").write_text('{"n": 7, "kind": "order", "amount": \n')
    writer, _ = build_bus_stream(
        spark,
        validate_spec(spec),
        channel="bus-test",
        checkpoint_dir=str(tmp_path / "checkpoint"),
        on_rule_counts=lambda b, c: counts.append(c),
        on_dead_letters=dead.append,
    )
    query = writer.start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()

    assert ns(lines(spark, tmp_path / "big")) == [2, 4]  # the other rules kept delivering
    assert ns(table(tmp_path / "db.sqlite", "big")) == [2, 4]
    assert ns(lines(spark, tmp_path / "refunds")) == [3]
    letters = lines(spark, tmp_path / "dlq")
    down = [letter for letter in letters if letter["data"].get("target") == "rules[2].sinks[0]"]
    assert len(down) == 6  # every event of the rule whose target is down
    assert {letter["data"]["rule"] for letter in down} == {"everything"}
    assert {letter["sluicerule"] for letter in down} == {"everything"}
    assert down[0]["subject"] == "rules[2].sinks[0]"
    unreadable = [letter for letter in letters if letter["data"]["stage"] == "source"]
    assert len(unreadable) == 1 and unreadable[0]["data"].get("rule") is None
    assert sum(dead) == 7
    everything = [r for batch in counts for r in batch if r["rule"] == "everything"]
    assert sum(r["failed"] for r in everything) == 6
    assert sum(r["targets"][0]["failed"] for r in everything) == 6
    assert sum(r["delivered"] for r in everything) == 0


def test_tolerance_none_names_the_rule_and_target(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "down.sqlite").mkdir()
    rules = standard_rules(tmp_path)
    rules[2]["sinks"] = [sqlite_sink(tmp_path / "down.sqlite", "all")]
    drop(tmp_path, "a.jsonl", ORDERS)
    with pytest.raises(PySparkException) as raised:
        run_bus(spark, tmp_path, bus_spec(tmp_path, rules))
    assert "rule 'everything' target rules[2].sinks[0] (jdbc)" in str(raised.value)


def test_a_rule_transform_failure_names_the_rule(spark: SparkSession, tmp_path: Path) -> None:
    rules = standard_rules(tmp_path)
    rules[1]["transforms"] = [{"type": "cast", "config": {"fields": {"data.kind": "long"}}}]
    drop(tmp_path, "a.jsonl", ORDERS)
    with pytest.raises(PySparkException) as raised:
        run_bus(spark, tmp_path, bus_spec(tmp_path, rules))
    assert "rule 'refunds' (rules[1]): rules[1].transforms[0] (cast)" in str(raised.value)


def test_rules_change_on_the_running_query(spark: SparkSession, tmp_path: Path) -> None:
    rules = standard_rules(tmp_path)
    spec = validate_spec(bus_spec(tmp_path, rules[:1]))
    counts: list[tuple[int, Any]] = []
    drop(tmp_path, "a.jsonl", ORDERS)
    writer, router = build_bus_stream(
        spark,
        spec,
        channel="bus-live",
        checkpoint_dir=str(tmp_path / "checkpoint"),
        on_rule_counts=lambda b, c: counts.append((b, c)),
    )
    query = writer.start()
    try:
        query.processAllAvailable()
        assert not (tmp_path / "refunds").exists()
        last_before = counts[-1][0]
        # add a rule, edit one (its pattern), while the query runs
        edited = [dict(rules[0], pattern={"data": {"kind": ["order"]}}), rules[1]]
        router.replace(validate_spec(bus_spec(tmp_path, edited)))
        drop(
            tmp_path,
            "b.jsonl",
            [{"n": 8, "kind": "refund", "amount": 1}, {"n": 9, "kind": "order"}],
        )
        query.processAllAvailable()
        # disable one
        disabled = [edited[0], dict(rules[1], enabled=False)]
        router.replace(validate_spec(bus_spec(tmp_path, disabled)))
        drop(tmp_path, "c.jsonl", [{"n": 10, "kind": "refund"}])
        query.processAllAvailable()
    finally:
        query.stop()

    assert ns(lines(spark, tmp_path / "refunds")) == [8]
    assert ns(lines(spark, tmp_path / "big")) == [2, 4, 9]
    first = min(b for b, c in counts for r in c if r["rule"] == "refunds" and r["delivered"])
    assert first <= last_before + 2
    assert [r["rule"] for r in counts[-1][1]] == ["big-orders", "refunds"]
    assert counts[-1][1][1]["matched"] == 0  # disabled


def test_replace_refuses_changes_beyond_the_rules(spark: SparkSession, tmp_path: Path) -> None:
    spec = validate_spec(bus_spec(tmp_path, standard_rules(tmp_path)))
    other = validate_spec(bus_spec(tmp_path, standard_rules(tmp_path), errors={"tolerance": "all"}))
    assert live_change(spec, validate_spec(bus_spec(tmp_path, standard_rules(tmp_path)[:1])))
    assert not live_change(spec, other)
    (tmp_path / "in").mkdir()
    _, router = build_bus_stream(spark, spec, channel="bus", checkpoint_dir=str(tmp_path / "c"))
    with pytest.raises(SpecError) as raised:
        router.replace(other)
    assert list(raised.value.errors) == ["errors"]


def vector_events(spark: SparkSession) -> DataFrame:
    """``(i, event, __event)``: each vector's event as JSON text (a string is raw text) and
    parsed (NULL when it is not JSON)."""
    events = [(i, vector["event"]) for i, vector in enumerate(VECTORS)]
    rows = [(i, e if e is None or isinstance(e, str) else json.dumps(e)) for i, e in events]
    frame = spark.createDataFrame(rows, "i int, event string").coalesce(1)
    return frame.withColumn("__event", F.try_parse_json("event"))


@pytest.mark.parametrize("native_reads", [True, False], ids=["native", "builtin"])
def test_conformance_vectors_through_rule_patterns(spark: SparkSession, native_reads: bool) -> None:
    """Every distinct vector pattern is one rule of one bus; the routing of all the vectors'
    events to those rules is one Spark job."""
    if native_reads and not native.native_functions(spark):
        pytest.fail("Sluice's Spark functions are missing from the session (make jars)")
    patterns: dict[str, int] = {}
    for vector in VECTORS:
        patterns.setdefault(json.dumps(vector["pattern"], sort_keys=True), len(patterns))
    root = "`__event`"
    if native_reads:
        is_object = F.expr(f"coalesce({native.kind(root)} = 'OBJECT', false)")

        def child(key: str) -> str:
            return native.field(root, key)
    else:
        is_object = F.expr(f"try_variant_get({root}, '$', 'struct<>') IS NOT NULL")

        def child(key: str) -> str:
            return variant_child(root, key)

    routes = [
        (is_object & rule_predicate(json.loads(text), child, native_matching=native_reads), [index])
        for text, index in patterns.items()
    ]
    routed = vector_events(spark).select("i", F.explode(routing_column(routes)).alias("rule"))
    pairs = {(row.i, row.rule) for row in routed.filter("rule IS NOT NULL").collect()}
    for i, vector in enumerate(VECTORS):
        rule = patterns[json.dumps(vector["pattern"], sort_keys=True)]
        assert ((i, rule) in pairs) is vector["matches"], (vector["id"], vector["note"])


def test_conformance_vectors_through_native_routes(spark: SparkSession) -> None:
    """The same, the routing as a bus routes with Sluice's functions: one ``route`` call per
    top-level member (exact values looked up in an index) and ``CASE WHEN`` predicates for
    the patterns on several members."""
    if not native.native_functions(spark):
        pytest.fail("Sluice's Spark functions are missing from the session (make jars)")
    patterns: dict[str, int] = {}
    for vector in VECTORS:
        patterns.setdefault(json.dumps(vector["pattern"], sort_keys=True), len(patterns))
    compiled = [(compile_pattern(json.loads(text)), [index]) for text, index in patterns.items()]
    plans, rest = route_plans(compiled)
    assert plans and any('"key"' in plan.routes for plan in plans)  # the index is exercised
    root = "`__event`"

    def child(key: str) -> str:
        return native.field(root, key)

    columns = [F.expr(native.route(child(plan.member), plan.routes)) for plan in plans]
    texts = list(patterns)
    others = [
        (rule_predicate(json.loads(texts[position]), child, native_matching=True), [position])
        for position in rest
    ]
    if others:
        columns.append(routing_column(others))
    is_object = F.expr(f"coalesce({native.kind(root)} = 'OBJECT', false)")
    routing = F.when(is_object, F.concat(*columns)).otherwise(F.array().cast("array<int>"))
    routed = vector_events(spark).select("i", F.explode(routing).alias("rule"))
    pairs = [(row.i, row.rule) for row in routed.filter("rule IS NOT NULL").collect()]
    assert len(pairs) == len(set(pairs))  # a rule's targets once per event
    for i, vector in enumerate(VECTORS):
        rule = patterns[json.dumps(vector["pattern"], sort_keys=True)]
        assert ((i, rule) in pairs) is vector["matches"], (vector["id"], vector["note"])


# -- a bus compiled into its query (Kafka targets only) ---------------------------------------


def kafka_rule(name: str, kind: str, bootstrap: str, topic: str, **extra: Any) -> dict[str, Any]:
    sink = {"type": "kafka", "config": {"bootstrap_servers": bootstrap, "topic": topic}}
    return {"name": name, "pattern": {"data": {"kind": [kind]}}, "sinks": [sink], **extra}


def kafka_values(spark: SparkSession, bootstrap: str, topic: str) -> list[dict[str, Any]]:
    rows = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .select(F.col("value").cast("string"))
        .collect()
    )
    return [json.loads(row.value) for row in rows]


def test_which_buses_are_compiled_into_their_query(tmp_path: Path) -> None:
    kafka = [kafka_rule("orders", "order", "127.0.0.1:9", "orders")]
    assert compiled_into_query(validate_spec(bus_spec(tmp_path, kafka)))
    # a disabled rule's other targets do not matter; an enabled one's do
    disabled_files = {"name": "off", "enabled": False, "sinks": [files_sink(tmp_path / "x")]}
    assert compiled_into_query(validate_spec(bus_spec(tmp_path, [*kafka, disabled_files])))
    files = {"name": "files", "sinks": [files_sink(tmp_path / "x")]}
    assert not compiled_into_query(validate_spec(bus_spec(tmp_path, [*kafka, files])))
    tolerant = {"errors": {"tolerance": "all"}}
    assert not compiled_into_query(validate_spec(bus_spec(tmp_path, kafka, **tolerant)))
    transformed = [{**kafka[0], "transforms": [{"type": "drop", "config": {"fields": ["data.n"]}}]}]
    assert not compiled_into_query(validate_spec(bus_spec(tmp_path, transformed)))
    retried = [kafka_rule("orders", "order", "127.0.0.1:9", "orders")]
    retried[0]["sinks"][0]["config"]["retry"] = {"attempts": 3}
    assert not compiled_into_query(validate_spec(bus_spec(tmp_path, retried)))
    other_format = kafka_rule("refunds", "refund", "127.0.0.1:9", "refunds")
    other_format["sinks"][0]["config"]["format"] = "cloudevents"
    assert not compiled_into_query(validate_spec(bus_spec(tmp_path, [*kafka, other_format])))
    assert not compiled_into_query(validate_spec(bus_spec(tmp_path, [files])))


def test_a_bus_shares_its_producer_batches_out_over_its_topics(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Many topics: smaller batches (their open batches fit the producer's buffer) and a
    longer linger (the sender thread wakes less often); a stage's own properties win."""

    def options(topics: int, **properties: str) -> dict[str, str]:
        rules = [kafka_rule(f"r{i}", "order", "127.0.0.1:9", f"t{i}") for i in range(topics)]
        if properties:
            rules[0]["sinks"][0]["config"]["properties"] = properties
            for rule in rules[1:]:
                rule["sinks"][0]["config"]["properties"] = properties
        plan = compile_bus(spark, validate_spec(bus_spec(tmp_path, rules)))
        return group_producer_options(plan.targets)

    assert options(1)["kafka.batch.size"] == str(256 * 1024)
    assert options(10)["kafka.batch.size"] == str(256 * 1024)
    assert int(options(100)["kafka.batch.size"]) * 100 * 2 <= 17 * 1024 * 1024
    assert options(300)["kafka.batch.size"] == str(8 * 1024 * 1024 // 300)
    assert {options(n)["kafka.linger.ms"] for n in (1, 100)} == {"100"}
    own = options(100, **{"kafka.linger.ms": "7", "kafka.batch.size": "32768"})
    assert (own["kafka.linger.ms"], own["kafka.batch.size"]) == ("7", "32768")


def test_a_kafka_only_bus_runs_compiled_into_its_query(
    spark: SparkSession, tmp_path: Path, kafka_bootstrap: str
) -> None:
    suffix = tmp_path.name[-12:].replace("_", "-").lower()
    topics = {kind: f"compiled-{kind}-{suffix}" for kind in ("order", "refund", "ping", "all")}
    rules = [
        kafka_rule("orders", "order", kafka_bootstrap, topics["order"]),
        kafka_rule("refunds", "refund", kafka_bootstrap, topics["refund"]),
        kafka_rule("pings", "ping", kafka_bootstrap, topics["ping"], enabled=False),
        {
            "name": "everything",
            "sinks": [
                {"type": "kafka", "config": {"bootstrap_servers": kafka_bootstrap, "topic": t}}
                for t in (topics["all"],)
            ],
        },
    ]
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in topics.values()]).values():
        future.result(30)
    spec = validate_spec(bus_spec(tmp_path, rules))
    drop(tmp_path, "a.jsonl", ORDERS)
    writer, router = build_bus_stream(
        spark,
        spec,
        channel="bus-compiled",
        checkpoint_dir=str(tmp_path / "checkpoint"),
        on_rule_counts=lambda batch_id, counts: None,
    )
    assert router.compiled
    query = writer.start()
    try:
        query.processAllAvailable()
        drop(tmp_path, "b.jsonl", [{"n": 6, "kind": "refund"}, {"n": 7, "kind": "order"}])
        query.processAllAvailable()
        progress = [json.loads(report.json) for report in query.recentProgress]
        # no foreachBatch: the Kafka sink is the query's own
        assert "Kafka" in progress[-1]["sink"]["description"], progress[-1]["sink"]
        # its rules change by a restart, not live
        with pytest.raises(SpecError) as refused:
            router.replace(spec)
        assert "compiled into its query" in str(refused.value)
        assert not live_change(spec, spec)
    finally:
        query.stop()

    assert ns(kafka_values(spark, kafka_bootstrap, topics["order"])) == [1, 2, 4, 7]
    assert ns(kafka_values(spark, kafka_bootstrap, topics["refund"])) == [3, 6]
    assert kafka_values(spark, kafka_bootstrap, topics["ping"]) == []  # disabled
    assert ns(kafka_values(spark, kafka_bootstrap, topics["all"])) == [1, 2, 3, 4, 5, 6, 7]

    # each batch's per-rule counts are in its progress report
    counted = [router.progress_counts(report) for report in progress if report["numInputRows"]]
    assert all(counts is not None for counts in counted)
    totals = {
        rule["rule"]: sum(counts[i]["matched"] for counts in counted if counts)
        for i, rule in enumerate(counted[0] or [])
    }
    assert totals == {"orders": 4, "refunds": 2, "pings": 0, "everything": 7}
    first = counted[0] or []
    assert first[1]["targets"] == [
        {"sink": "rules[1].sinks[0]", "type": "kafka", "delivered": 1, "failed": 0}
    ]


def test_a_compiled_bus_fails_on_a_bad_event_naming_the_stage(
    spark: SparkSession, tmp_path: Path, kafka_bootstrap: str
) -> None:
    rules = [kafka_rule("orders", "order", kafka_bootstrap, "compiled-bad")]
    cast = [{"type": "cast", "config": {"fields": {"data.amount": "long"}}}]
    spec = validate_spec(bus_spec(tmp_path, rules, transforms=cast))
    drop(tmp_path, "a.jsonl", [{"n": 1, "kind": "order", "amount": "lots"}])
    writer, router = build_bus_stream(
        spark, spec, channel="bus-compiled-bad", checkpoint_dir=str(tmp_path / "checkpoint")
    )
    assert router.compiled
    query = writer.start()
    try:
        with pytest.raises(Exception, match=r"transforms\[0\] \(cast\)"):
            query.processAllAvailable()
    finally:
        query.stop()
