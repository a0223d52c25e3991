"""A/B micro-benchmark of the data plane, stage by stage, without Kafka.

``python -m bench.stages [--events N] [--repeat R] [--cases a,b,...] [--explain CASE]``

Builds batch DataFrames shaped like Spark's Kafka source (``value`` binary, ``topic``,
``partition``, ``offset``, ``timestamp``) over events like :mod:`bench.workload`'s, kept in a
parquet file, and times each case with the ``noop`` writer on ``local[1]`` (the median of
``--repeat`` runs after one warm-up). Every case exists twice: ``sluice.*`` is the plan
:mod:`pipelines` builds (source json → filter → cloudevents sink), ``plain.*`` the same work
hand-written as in :mod:`bench.spark_job`:

* ``read`` - the records only (the cost of the scan, shared by everything);
* ``parse`` - records to events;
* ``filter`` - and the benchmark pattern;
* ``full`` - and the Kafka sink rows (CloudEvents JSON), i.e. the whole bench query;
* ``sink`` - records to Kafka sink rows with no filter (the wrap, on every event).

``--explain CASE`` prints the formatted plan and the generated code of one case instead.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench import spark_job
from bench.workload import EVENT_BYTES, PATTERN, REGIONS, STATUSES
from pipelines.errors import capturing_failed_events, fail_fast, failing_stage
from pipelines.query import apply_transforms
from pipelines.sinks import SINK_CHECKS
from pipelines.sinks.kafka import events_to_kafka_records
from pipelines.sources.kafka import kafka_records_to_events
from pipelines.spec import StageSpec
from pipelines.spec.configs import KafkaSinkConfig, KafkaSourceConfig
from runtime_adapter.config import RuntimeConfig

BOOTSTRAP = "localhost:9092"
SOURCE = KafkaSourceConfig(bootstrap_servers=BOOTSTRAP, topics=["bench-in"], format="json")
SINK = KafkaSinkConfig(bootstrap_servers=BOOTSTRAP, topic="bench-out", format="cloudevents")


def session() -> SparkSession:
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("sluice-bench-stages")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.driver.memory", "2g")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.jars", ",".join(str(p) for p in RuntimeConfig.from_env().spark_jars()))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def records_sql(events: int) -> str:
    """SQL generating Kafka-shaped records whose values are like ``workload.make_event``'s."""
    regions = ", ".join(f"'{r}'" for r in REGIONS)
    statuses = ", ".join(f"'{s}'" for s in STATUSES)
    payload = (
        "concat('{\"seq\":', id, ',\"produced_at_ms\":', 1700000000000 + id, "
        "',\"amount\":', CAST(round(rand(42) * 250, 2) AS STRING), "
        f'\',"region":"\', element_at(array({regions}), CAST(rand(7) * 5 AS INT) + 1), '
        f'\'","status":"\', element_at(array({statuses}), CAST(rand(9) * 5 AS INT) + 1), '
        '\'","customer":"customer-\', lpad(CAST(CAST(rand(11) * 100000 AS INT) AS STRING), '
        "6, '0'), '\",\"note\":\"')"
    )
    return f"""
        SELECT CAST(NULL AS BINARY) AS key,
               CAST(concat(p, repeat('x', greatest({EVENT_BYTES} - length(p) - 2, 0)), '"}}')
                    AS BINARY) AS value,
               'bench-in' AS topic,
               CAST(id % 2 AS INT) AS partition,
               id DIV 2 AS offset,
               timestamp_millis(1700000000000 + id * 7) AS timestamp,
               0 AS timestampType
        FROM (SELECT id, {payload} AS p FROM range({events}))
    """


def records(spark: SparkSession, events: int) -> DataFrame:
    """The records, from a parquet file made on first use (kept in the temp directory)."""
    path = Path(tempfile.gettempdir()) / f"sluice-bench-stages-{events}.parquet"
    if not (path / "_SUCCESS").exists():
        spark.sql(records_sql(events)).coalesce(1).write.mode("overwrite").parquet(str(path))
    return spark.read.parquet(str(path))


def sluice_cases(records: DataFrame) -> dict[str, DataFrame]:
    with capturing_failed_events(False):  # as build_stream under errors.tolerance none
        return _sluice_cases(records)


def _sluice_cases(records: DataFrame) -> dict[str, DataFrame]:
    # What pipelines.builder.build_stream composes (errors.tolerance none, the default).
    with failing_stage("source"):
        events = kafka_records_to_events(records, SOURCE)
    events = events.withColumn("origin_payload", F.lit(None).cast("string"))
    selected = apply_transforms(events, [StageSpec(type="filter", config={"pattern": PATTERN})])

    def to_records(events: DataFrame) -> DataFrame:
        check = SINK_CHECKS.get("kafka")
        if check is not None:
            with failing_stage("sink"):
                events = check(events, SINK)
        return events_to_kafka_records(fail_fast(events), SINK)

    return {
        "parse": events,
        "filter": selected,
        "full": to_records(selected),
        "sink": to_records(events),
    }


def plain_cases(records: DataFrame) -> dict[str, DataFrame]:
    parsed = spark_job.plain_parsed(records)
    selected = spark_job.plain_selected(parsed)
    return {
        "parse": parsed,
        "filter": selected,
        "full": spark_job.plain_records(selected),
        "sink": spark_job.plain_records(parsed),
    }


def all_cases(records: DataFrame) -> dict[str, DataFrame]:
    cases = {"read": records}
    for prefix, build in (("sluice", sluice_cases), ("plain", plain_cases)):
        cases.update({f"{prefix}.{name}": df for name, df in build(records).items()})
    return cases


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float
    """CPU seconds of the whole JVM (task, GC and JIT threads): steadier than wall time on a
    busy machine."""


def jvm_cpu_seconds(spark: SparkSession) -> float:
    pid = spark._jvm.java.lang.ProcessHandle.current().pid()  # type: ignore[union-attr]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def time_write(df: DataFrame) -> Timing:
    spark = df.sparkSession
    cpu, wall = jvm_cpu_seconds(spark), time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return Timing(time.perf_counter() - wall, jvm_cpu_seconds(spark) - cpu)


def median_timing(df: DataFrame, repeat: int) -> Timing:
    time_write(df)  # warm-up: code generation, JIT, file cache
    runs = [time_write(df) for _ in range(repeat)]
    return Timing(statistics.median(r.wall for r in runs), statistics.median(r.cpu for r in runs))


def report(events: int, timings: dict[str, Timing]) -> str:
    lines = [f"{'case':<16}{'wall s':>8}{'cpu s':>8}{'events/cpu s':>14}{'plain/sluice cpu':>18}"]
    for name, t in timings.items():
        kind, _, stage = name.partition(".")
        ratio = ""
        if kind == "sluice" and f"plain.{stage}" in timings:
            # As the benchmark states it: Sluice's throughput over plain PySpark's.
            ratio = f"{timings[f'plain.{stage}'].cpu / t.cpu:.2f}x"
        lines.append(f"{name:<16}{t.wall:>8.2f}{t.cpu:>8.2f}{events / t.cpu:>14,.0f}{ratio:>18}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cases", help="comma-separated case names (default: all)")
    parser.add_argument("--explain", metavar="CASE", help="print the plan and code of CASE")
    args = parser.parse_args()

    spark = session()
    cases = all_cases(records(spark, args.events))
    if args.explain:
        cases[args.explain].explain("formatted")
        cases[args.explain].explain("codegen")
        return
    chosen = args.cases.split(",") if args.cases else list(cases)
    timings = {}
    for name in chosen:
        timings[name] = median_timing(cases[name], args.repeat)
        print(f"{name}: {timings[name]}", flush=True)
    print(report(args.events, timings))
    spark.stop()


if __name__ == "__main__":
    main()
