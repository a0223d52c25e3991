"""A/B: the cost of schema discovery on the bench channel (target: on/off at least 0.95x).

``python -m bench.discovery [--events N] [--repeat R] [--explain]``

The bench channel reads Kafka, so discovery samples it beside its query
(:func:`pipelines.discovery.kafka_samples`): the query :mod:`pipelines` builds is the same
with discovery on or off (checked here on the plans), and what discovery costs is one small
batch job every ``KAFKA_SAMPLE_SECONDS``: read the last record of each partition, parse it
with the source's code, write its JSON. This times that job (on a slice of the bench records
as the Kafka read would return them: ``KAFKA_SAMPLE_PARTITIONS`` records) and the query
(Kafka-shaped records → events → filter → CloudEvents Kafka records) on ``local[1]`` with the
``noop`` writer, as :mod:`bench.stage_counts` does, and states the throughput with discovery
on over off: a saturated core gives the job its CPU every interval,
``1 - job_cpu / interval``.

Sources that are not Kafka-backed (generator, files) are sampled in the query by an
``observe`` instead (:func:`pipelines.discovery.observe_samples`); that case is timed too,
side by side with the plain query (runs alternating, medians of ``--repeat`` rounds).
``--explain`` prints its plan.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.stages import SINK, SOURCE, Timing, jvm_cpu_seconds, records, session, time_write
from bench.workload import PATTERN
from pipelines import native
from pipelines.builder import apply_transforms, build_events
from pipelines.cloudevents import event_json
from pipelines.discovery import (
    DISCOVERY_METRICS,
    KAFKA_SAMPLE_PARTITIONS,
    KAFKA_SAMPLE_SECONDS,
    observe_samples,
)
from pipelines.errors import capturing_failed_events, fail_fast, failing_stage
from pipelines.sinks import SINK_CHECKS
from pipelines.sinks.kafka import events_to_kafka_records
from pipelines.sources.kafka import kafka_records_to_events
from pipelines.spec import StageSpec, validate_spec


def bench_query(records: DataFrame, *, observe: bool) -> DataFrame:
    """What ``build_stream`` composes for the bench channel (kafka → filter → kafka), with
    ``observe`` as a source that is not Kafka-backed would have it under discovery."""
    with capturing_failed_events(False):
        with failing_stage("source"):
            events = kafka_records_to_events(records, SOURCE)
        if observe:
            events = observe_samples(events)
        events = events.withColumn("origin_payload", F.lit(None).cast("string"))
        filter_stage = StageSpec(type="filter", config={"pattern": PATTERN})
        events = apply_transforms(events, [filter_stage])
        check = SINK_CHECKS.get("kafka")
        if check is not None:
            with failing_stage("sink"):
                events = check(events, SINK)
        return events_to_kafka_records(fail_fast(events), SINK)


def sample_job(records: DataFrame) -> DataFrame:
    """What :func:`pipelines.discovery.kafka_samples` runs after its Kafka read: the last
    records (one per partition, ``KAFKA_SAMPLE_PARTITIONS``) parsed by the source, healthy
    ones as JSON."""
    # The records a Kafka read of [offset - 1, offset) per partition returns: a few rows
    # already in the driver's reach (not a scan of the whole bench set).
    rows = records.orderBy(F.col("offset").desc()).limit(KAFKA_SAMPLE_PARTITIONS).collect()
    newest = records.sparkSession.createDataFrame(rows, records.schema)
    with capturing_failed_events(False):
        events = kafka_records_to_events(newest, SOURCE)
    healthy = events.where(F.col("failure").isNull())
    return healthy.select(event_json(native.json_zone(healthy)).alias("event"))


def time_collect(df: DataFrame) -> Timing:
    spark = df.sparkSession
    cpu, wall = jvm_cpu_seconds(spark), time.perf_counter()
    df.collect()
    return Timing(time.perf_counter() - wall, jvm_cpu_seconds(spark) - cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2, help="untimed rounds first (JIT)")
    parser.add_argument("--explain", action="store_true")
    args = parser.parse_args()

    spark = session()
    source = records(spark, args.events)
    with_discovery = build_events_plan(spark, discovery=True)
    without = build_events_plan(spark, discovery=False)
    same = with_discovery == without and DISCOVERY_METRICS not in with_discovery
    print(f"the Kafka bench channel's query with discovery on is the one with it off: {same}")
    cases = {
        "off": bench_query(source, observe=False),
        "observe": bench_query(source, observe=True),
    }
    if args.explain:
        cases["observe"].explain("formatted")
        return
    job = sample_job(source)
    for _ in range(args.warmup):  # code generation, JIT, file cache
        for df in cases.values():
            time_write(df)
        time_collect(job)
    runs: dict[str, list[Timing]] = {name: [] for name in cases}
    jobs: list[Timing] = []
    for round_ in range(args.repeat):
        for name, df in cases.items():
            runs[name].append(time_write(df))
            t = runs[name][-1]
            print(f"round {round_} {name}: wall {t.wall:.2f}s cpu {t.cpu:.2f}s", flush=True)
        jobs.append(time_collect(job))
        print(f"round {round_} sample job: wall {jobs[-1].wall:.3f}s cpu {jobs[-1].cpu:.3f}s")
    print(f"{'case':<10}{'wall s':>8}{'cpu s':>8}{'events/s wall':>15}{'events/cpu s':>14}")
    medians = {}
    for name, timings in runs.items():
        wall = statistics.median(t.wall for t in timings)
        cpu = statistics.median(t.cpu for t in timings)
        medians[name] = (wall, cpu)
        line = f"{name:<10}{wall:>8.2f}{cpu:>8.2f}{args.events / wall:>15,.0f}"
        print(line + f"{args.events / cpu:>14,.0f}")
    job_wall = statistics.median(t.wall for t in jobs)
    job_cpu = statistics.median(t.cpu for t in jobs)
    ratio = 1 - job_cpu / KAFKA_SAMPLE_SECONDS  # the CPU a saturated core gives the job
    print(f"sample job: wall {job_wall:.3f}s cpu {job_cpu:.3f}s every {KAFKA_SAMPLE_SECONDS:.0f}s")
    print(f"discovery on/off throughput, Kafka bench channel: {ratio:.3f} (target >= 0.95)")
    (wall_off, cpu_off), (wall_obs, cpu_obs) = medians["off"], medians["observe"]
    print(
        f"observe (non-Kafka sources) on/off throughput: wall {wall_off / wall_obs:.3f}, "
        f"cpu {cpu_off / cpu_obs:.3f}"
    )
    spark.stop()


def build_events_plan(spark: SparkSession, *, discovery: bool) -> str:
    """The analyzed plan of the bench channel's events as :func:`build_events` builds them
    from a Kafka source (the stream is not started)."""
    spec = validate_spec(
        {
            "source": {"type": "kafka", "config": SOURCE.model_dump(exclude_none=True)},
            "transforms": [{"type": "filter", "config": {"pattern": PATTERN}}],
            "sink": {"type": "kafka", "config": SINK.model_dump(exclude_none=True)},
        }
    )
    with capturing_failed_events(False):
        events = build_events(spark, spec, discovery=discovery)
    plan = str(events._jdf.queryExecution().analyzed().toString())
    return re.sub(
        r"#\d+L?|@[0-9a-f]+\b|\b[0-9a-f]{8}-[0-9a-f-]{27}\b", "", plan
    )  # ids differ per build


if __name__ == "__main__":
    main()
