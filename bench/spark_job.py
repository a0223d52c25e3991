"""One Spark run of the data-plane benchmark, in a process of its own (``local[N]`` is per process).

``python -m bench.spark_job --mode MODE --cores N --bootstrap B --source T --sink T
[--latency-seconds S]`` prints one JSON line with what it measured.

* ``sluice`` builds the query with :func:`pipelines.builder.build_stream` from a channel spec:
  Kafka (json) → filter (the benchmark pattern) → Kafka (cloudevents: the wrap).
* ``plain`` is the same work written by hand in PySpark, as a Spark user would without Sluice:
  ``from_json`` with a fixed schema, a Column filter, ``to_json(struct(...))``.
* ``sluice-pass`` is a Sluice pass-through channel: Kafka → Kafka, no transforms, both ends
  in the default ``format: json`` (``--source-format`` / ``--sink-format`` pick others);
  ``plain-pass`` copies ``key`` and ``value`` from Spark's Kafka source to its sink (the
  MirrorMaker 2 comparison, :mod:`bench.mirror`).

Without ``--latency-seconds`` the query drains the backlog with ``availableNow`` and the time
from start to termination is measured. With it, the query runs continuously for that long
(the benchmark produces paced events meanwhile) and is then stopped; ``--poll`` polls it from
Python as the runtime's driver does (``lastProgress`` and ``status`` every 0.5 s), and the
JSON line then carries the batches' median ``durationMs`` and input rows (``batches``).
``--real-time S`` runs it in Spark's real-time mode (``trigger(realTime=...)``, checkpointing
every S seconds; for ``sluice`` modes through the channel's ``runtime.mode: real-time``)
instead of back-to-back micro-batches. ``--conf spark.NAME=VALUE`` sets a session option.
``--sink-prop kafka.linger.ms=5`` (repeatable) adds Kafka producer options to the sink,
``--source-prop kafka.max.poll.records=500`` consumer options to the source,
``--max-offsets`` sets ``maxOffsetsPerTrigger``, ``--explain`` prints the physical plan.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from bench.workload import PATTERN
from pipelines.builder import build_stream
from pipelines.native import checkpoint_options
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
        .config("spark.sql.streaming.numRecentProgressUpdates", "1000")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def sluice_spec(args: argparse.Namespace) -> dict:
    """The bench channel (``sluice``) or the pass-through channel (``sluice-pass``)."""
    passing = args.mode == "sluice-pass"
    source = {
        "bootstrap_servers": args.bootstrap,
        "topics": [args.source],
        "starting_offsets": "earliest",
        "format": args.source_format or "json",
    }
    if args.max_offsets:
        source["max_events_per_trigger"] = args.max_offsets
    if args.source_prop:
        source["properties"] = dict(prop.split("=", 1) for prop in args.source_prop)
    sink = {
        "bootstrap_servers": args.bootstrap,
        "topic": args.sink,
        "format": args.sink_format or ("json" if passing else "cloudevents"),
    }
    if args.sink_prop:
        sink["properties"] = dict(prop.split("=", 1) for prop in args.sink_prop)
    transforms = [] if passing else [{"type": "filter", "config": {"pattern": PATTERN}}]
    spec = {
        "source": {"type": "kafka", "config": source},
        "transforms": transforms,
        "sink": {"type": "kafka", "config": sink},
    }
    if args.real_time:  # the channel's own execution mode (pipelines.query.with_trigger)
        spec["runtime"] = {"mode": "real-time", "interval_seconds": args.real_time}
    return spec


def sluice_writer(spark: SparkSession, args: argparse.Namespace, checkpoint: str):
    from runtime_adapter.host.hosted import SESSION_SQL_OPTIONS

    # as a channel's session has them (runtime_adapter.host.hosted.HostedConnector.session)
    given = {setting.split("=", 1)[0] for setting in args.conf or ()}  # --conf wins
    for key, value in {**SESSION_SQL_OPTIONS, **checkpoint_options(spark)}.items():
        if key not in given:
            spark.conf.set(key, value)
    spec = validate_spec(sluice_spec(args))
    return build_stream(
        spark, spec, channel="bench", checkpoint_dir=checkpoint, count_stages=args.count_stages
    )


def plain_source(spark: SparkSession, args: argparse.Namespace) -> DataFrame:
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.source)
        .option("startingOffsets", "earliest")
    )
    if args.max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", str(args.max_offsets))
    for prop in args.source_prop or ():
        key, value = prop.split("=", 1)
        reader = reader.option(key, value)
    return reader.load()


def plain_events(spark: SparkSession, args: argparse.Namespace) -> DataFrame:
    """The benchmark's work as a PySpark user would write it by hand."""
    if args.mode == "plain-pass":
        return plain_source(spark, args).select("key", "value")
    return plain_records(plain_selected(plain_parsed(plain_source(spark, args))))


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
    writer = (
        plain_events(spark, args)
        .writeStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("topic", args.sink)
        .option("checkpointLocation", checkpoint)
    )
    for prop in args.sink_prop or ():
        key, value = prop.split("=", 1)
        writer = writer.option(key, value)
    return writer


def poll_like_the_driver(query, stop: threading.Event) -> None:
    """What a runtime driver does while a query runs (``runtime_adapter.host.hosted``): every
    ``ACTIVE_INTERVAL`` (0.5 s) read ``isActive``, ``lastProgress`` (as JSON) and, after
    missed batches, their reports (``progress_after``); each call is a Py4J round trip into
    the driver JVM."""
    from runtime_adapter.host.hosted import ACTIVE_INTERVAL
    from runtime_adapter.host.progress import progress_after

    last_batch = -1
    while not stop.wait(ACTIVE_INTERVAL):
        if not query.isActive:
            return
        progress = query.lastProgress
        if progress is not None:
            data = json.loads(progress.json)
            if data.get("batchId", -1) > last_batch + 1 and last_batch >= 0:
                progress_after(query, last_batch)
            last_batch = data.get("batchId", -1)


def batch_summary(progresses: list) -> dict:
    """Median ``durationMs`` of each phase, over the batches that read rows."""
    batches = [p for p in progresses if p["numInputRows"]]
    if not batches:
        return {}
    keys = sorted({key for p in batches for key in p["durationMs"]})
    summary = {key: statistics.median(p["durationMs"].get(key, 0) for p in batches) for key in keys}
    summary["rows"] = statistics.median(p["numInputRows"] for p in batches)
    summary["count"] = len(batches)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser()
    modes = ["sluice", "plain", "sluice-pass", "plain-pass"]
    parser.add_argument("--mode", choices=modes, required=True)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--sink", required=True)
    parser.add_argument("--latency-seconds", type=float, default=0.0)
    parser.add_argument("--source-format", help="sluice modes: the Kafka source's format")
    parser.add_argument("--sink-format", help="sluice modes: the Kafka sink's format")
    parser.add_argument("--sink-prop", action="append", help="kafka.NAME=VALUE for the sink")
    parser.add_argument("--source-prop", action="append", help="kafka.NAME=VALUE for the source")
    parser.add_argument("--max-offsets", type=int, help="maxOffsetsPerTrigger")
    parser.add_argument("--poll", action="store_true", help="poll the query like the driver")
    parser.add_argument(
        "--real-time",
        type=float,
        help="real-time mode (trigger(realTime=...)) checkpointing every this many seconds",
    )
    parser.add_argument(
        "--conf", action="append", help="spark.NAME=VALUE set in the session (before the query)"
    )
    parser.add_argument("--no-count-stages", dest="count_stages", action="store_false")
    parser.add_argument("--explain", action="store_true", help="print the physical plan")
    args = parser.parse_args()

    spark = session(args.cores)
    for setting in args.conf or ():
        key, value = setting.split("=", 1)
        spark.conf.set(key, value)
    checkpoint = tempfile.mkdtemp(prefix=f"sluice-bench-{args.mode}-")
    build = sluice_writer if args.mode.startswith("sluice") else plain_writer
    writer = build(spark, args, checkpoint)
    if args.explain:
        query = writer.trigger(availableNow=True).start()
        query.awaitTermination()
        query.explain(extended=True)
        spark.stop()
        return
    stop = threading.Event()
    if args.latency_seconds:
        if args.real_time and not args.mode.startswith("sluice"):
            writer = writer.outputMode("update").trigger(
                realTime=f"{round(args.real_time * 1000)} milliseconds"
            )
        query = writer.start()
        poller = threading.Thread(target=poll_like_the_driver, args=(query, stop), daemon=True)
        if args.poll:
            poller.start()
        # Tell the parent the query is up, so it starts producing paced events.
        print(json.dumps({"ready": True}), flush=True)
        time.sleep(args.latency_seconds)
        stop.set()
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
    progresses = [json.loads(p.json) for p in query.recentProgress]
    rows_in = sum(p["numInputRows"] for p in progresses)
    result = {"seconds": seconds, "rows_in": rows_in, "batches": batch_summary(progresses)}
    print(json.dumps(result), flush=True)
    spark.stop()
    shutil.rmtree(checkpoint, ignore_errors=True)


if __name__ == "__main__":
    main()
