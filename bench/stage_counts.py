"""A/B: the cost of per-stage event counts (``DataFrame.observe``) on the bench query.

``python -m bench.stage_counts [--events N] [--repeat R] [--explain]``

The whole bench query as :mod:`pipelines` builds it (Kafka-shaped records → events → filter
→ CloudEvents Kafka records, ``errors.tolerance: none``), once without and once with the
observe a channel needs at its error gate (:func:`pipelines.stage_metrics.observe_stages`: the rows
and failures per stage) when its sink does not report the rows it wrote or it runs under
``errors.tolerance: all``. The bench channel itself, Kafka to Kafka under ``none``, is
counted from its progress alone (``numInputRows``, ``sink.numOutputRows``): no observe, no
cost; this measures what the others pay. Timed
side by side with the ``noop`` writer on ``local[1]`` as in :mod:`bench.stages`: the runs
alternate (one of each per round, after ``--warmup`` untimed rounds) so that a busy machine
weighs on both alike; medians of ``--repeat`` rounds. ``--explain`` prints the plan.
"""

from __future__ import annotations

import argparse
import statistics

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from bench.stages import SINK, SOURCE, Timing, records, session, time_write
from bench.workload import PATTERN
from pipelines.errors import capturing_failed_events, fail_fast, failing_stage
from pipelines.query import apply_transforms
from pipelines.sinks import SINK_CHECKS
from pipelines.sinks.kafka import events_to_kafka_records
from pipelines.sources.kafka import kafka_records_to_events
from pipelines.spec import StageSpec
from pipelines.stage_metrics import StagePoint, observe_stages

POINTS = [
    StagePoint(0, "source", None, "kafka", "source"),
    StagePoint(1, "transform", 0, "filter", "transforms[0] (filter)"),
    StagePoint(2, "sink", None, "kafka", "sink"),
]


def bench_query(records: DataFrame, *, count_stages: bool) -> DataFrame:
    """What ``build_stream`` composes for the bench channel (kafka → filter → kafka)."""
    with capturing_failed_events(False):
        with failing_stage("source"):
            events = kafka_records_to_events(records, SOURCE)
        events = events.withColumn("origin_payload", F.lit(None).cast("string"))
        filter_stage = StageSpec(type="filter", config={"pattern": PATTERN})
        events = apply_transforms(events, [filter_stage], count_stages=count_stages)
        check = SINK_CHECKS.get("kafka")
        if check is not None:
            with failing_stage("sink"):
                events = check(events, SINK)
        if count_stages:
            events = observe_stages(events, POINTS)
        return events_to_kafka_records(fail_fast(events), SINK)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2, help="untimed rounds first (JIT)")
    parser.add_argument("--explain", action="store_true")
    args = parser.parse_args()

    spark = session()
    source = records(spark, args.events)
    cases = {
        "without": bench_query(source, count_stages=False),
        "with": bench_query(source, count_stages=True),
    }
    if args.explain:
        cases["with"].explain("formatted")
        return
    for _ in range(args.warmup):  # code generation, JIT, file cache
        for df in cases.values():
            time_write(df)
    runs: dict[str, list[Timing]] = {name: [] for name in cases}
    for round_ in range(args.repeat):
        for name, df in cases.items():
            runs[name].append(time_write(df))
            t = runs[name][-1]
            print(f"round {round_} {name}: wall {t.wall:.2f}s cpu {t.cpu:.2f}s", flush=True)
    print(f"{'case':<10}{'wall s':>8}{'cpu s':>8}{'events/s wall':>15}{'events/cpu s':>14}")
    medians = {}
    for name, timings in runs.items():
        wall = statistics.median(t.wall for t in timings)
        cpu = statistics.median(t.cpu for t in timings)
        medians[name] = (wall, cpu)
        line = f"{name:<10}{wall:>8.2f}{cpu:>8.2f}{args.events / wall:>15,.0f}"
        print(line + f"{args.events / cpu:>14,.0f}")
    (wall_a, cpu_a), (wall_b, cpu_b) = medians["without"], medians["with"]
    print(f"with/without throughput: wall {wall_a / wall_b:.3f}, cpu {cpu_a / cpu_b:.3f}")
    paired = [a.cpu / b.cpu for a, b in zip(runs["without"], runs["with"], strict=True)]
    print(f"median of the rounds' with/without cpu throughput: {statistics.median(paired):.3f}")
    spark.stop()


if __name__ == "__main__":
    main()
