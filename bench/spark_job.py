"""One Spark run of the data-plane benchmark, in a process of its own (``local[N]`` is per process).

``python -m bench.spark_job --mode sluice|plain --cores N --bootstrap B --source T --sink T
[--latency-seconds S]`` prints one JSON line with what it measured.

* ``sluice`` builds the query with :func:`pipelines.builder.build_stream` from a channel spec:
  Kafka (json) → filter (the benchmark pattern) → Kafka (cloudevents: the wrap).
* ``plain`` is the same work written by hand in PySpark, as a Spark user would without Sluice:
  ``from_json`` with a fixed schema, a Column filter, ``to_json(struct(...))``.

Without ``--latency-seconds`` the query drains the backlog with ``availableNow`` and the time
from start to termination is measured. With it, the query runs continuously for that long
(the benchmark produces paced events meanwhile) and is then stopped.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from bench.workload import PATTERN
from pipelines.builder import build_stream
from pipelines.spec import validate_spec
from runtime_adapter.config import RuntimeConfig

PAYLOAD_SCHEMA = T.StructType(
    [
        T.StructField("seq", T.LongType()),
        T.StructField("produced_at_ms", T.LongType()),
        T.StructField("amount", T.DoubleType()),
        T.StructField("region", T.StringType()),
        T.StructField("status", T.StringType()),
        T.StructField("customer", T.StringType()),
        T.StructField("note", T.StringType()),
    ]
)


def session(cores: int) -> SparkSession:
    jars = ",".join(str(p) for p in RuntimeConfig.from_env().spark_jars())
    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("sluice-bench")
        .config("spark.jars", jars)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def sluice_writer(spark: SparkSession, args: argparse.Namespace, checkpoint: str):
    spec = validate_spec(
        {
            "source": {
                "type": "kafka",
                "config": {
                    "bootstrap_servers": args.bootstrap,
                    "topics": [args.source],
                    "starting_offsets": "earliest",
                    "format": "json",
                },
            },
            "transforms": [{"type": "filter", "config": {"pattern": PATTERN}}],
            "sink": {
                "type": "kafka",
                "config": {
                    "bootstrap_servers": args.bootstrap,
                    "topic": args.sink,
                    "format": "cloudevents",
                },
            },
        }
    )
    return build_stream(spark, spec, channel="bench", checkpoint_dir=checkpoint)


def plain_events(spark: SparkSession, args: argparse.Namespace) -> DataFrame:
    """The benchmark's work as a PySpark user would write it by hand."""
    records = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.source)
        .option("startingOffsets", "earliest")
        .load()
    )
    return plain_records(plain_selected(plain_parsed(records)))


def plain_parsed(records: DataFrame) -> DataFrame:
    """Kafka records with their value parsed by ``from_json`` with a fixed schema."""
    return records.select(
        "topic",
        "partition",
        "offset",
        "timestamp",
        F.from_json(F.col("value").cast("string"), PAYLOAD_SCHEMA).alias("data"),
    )


def plain_selected(parsed: DataFrame) -> DataFrame:
    """The benchmark pattern as a hand-written Column filter."""
    return parsed.filter(
        (F.col("data.amount") > 100)
        & F.col("data.region").startswith("eu-")
        & ~F.col("data.status").isin("cancelled", "test")
    )


def plain_records(selected: DataFrame) -> DataFrame:
    """Kafka sink rows (key, value) of the CloudEvents JSON written with ``to_json(struct)``."""
    event = F.struct(
        F.lit("1.0").alias("specversion"),
        F.concat_ws("/", "topic", "partition", "offset").alias("id"),
        F.concat(F.lit("kafka://"), F.col("topic")).alias("source"),
        F.lit("sluice.kafka.record").alias("type"),
        F.date_format("timestamp", "yyyy-MM-dd'T'HH:mm:ss.SSSXXX").alias("time"),
        F.lit("application/json").alias("datacontenttype"),
        F.col("data"),
    )
    return selected.select(
        F.concat_ws("/", "topic", "partition", "offset").cast("binary").alias("key"),
        F.to_json(event).alias("value"),
    )


def plain_writer(spark: SparkSession, args: argparse.Namespace, checkpoint: str):
    return (
        plain_events(spark, args)
        .writeStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("topic", args.sink)
        .option("checkpointLocation", checkpoint)
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["sluice", "plain"], required=True)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--sink", required=True)
    parser.add_argument("--latency-seconds", type=float, default=0.0)
    args = parser.parse_args()

    spark = session(args.cores)
    checkpoint = tempfile.mkdtemp(prefix=f"sluice-bench-{args.mode}-")
    build = sluice_writer if args.mode == "sluice" else plain_writer
    writer = build(spark, args, checkpoint)
    if args.latency_seconds:
        query = writer.start()
        # Tell the parent the query is up, so it starts producing paced events.
        print(json.dumps({"ready": True}), flush=True)
        time.sleep(args.latency_seconds)
        query.stop()
        seconds = args.latency_seconds
    else:
        started = time.perf_counter()
        query = writer.trigger(availableNow=True).start()
        query.awaitTermination()
        seconds = time.perf_counter() - started
    if query.exception() is not None:
        print(json.dumps({"error": str(query.exception())[:2000]}), flush=True)
        sys.exit(1)
    rows_in = sum(p["numInputRows"] for p in query.recentProgress)
    print(json.dumps({"seconds": seconds, "rows_in": rows_in}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
