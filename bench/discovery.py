"""A/B: the cost of schema discovery's sampling on the bench query (target: on/off at least 0.95x).

``python -m bench.discovery [--events N] [--repeat R] [--explain]``

The whole bench channel's query as :mod:`pipelines` builds it (Kafka-shaped records → events
→ filter → CloudEvents Kafka records, ``errors.tolerance: none``), once as it runs without
discovery and once with the sampling ``observe`` a channel with discovery on gets right
after its source (:func:`pipelines.discovery.observe_samples`: one ``first`` and a few
``min_by`` over a hash of the event id; an event's JSON is written only when picked). Timed
as :mod:`bench.stage_counts` times its cases: the ``noop`` writer on ``local[1]``, the runs
alternating (one of each per round, after ``--warmup`` untimed rounds) so that a busy
machine weighs on both alike; medians of ``--repeat`` rounds. ``--explain`` prints the plan.
"""

from __future__ import annotations

import argparse
import statistics

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from bench.stages import SINK, SOURCE, Timing, records, session, time_write
from bench.workload import PATTERN
from pipelines.builder import apply_transforms
from pipelines.discovery import observe_samples
from pipelines.errors import capturing_failed_events, fail_fast, failing_stage
from pipelines.sinks import SINK_CHECKS
from pipelines.sinks.kafka import events_to_kafka_records
from pipelines.sources.kafka import kafka_records_to_events
from pipelines.spec import StageSpec


def bench_query(records: DataFrame, *, discovery: bool) -> DataFrame:
    """What ``build_stream`` composes for the bench channel (kafka → filter → kafka)."""
    with capturing_failed_events(False):
        with failing_stage("source"):
            events = kafka_records_to_events(records, SOURCE)
        if discovery:
            events = observe_samples(events)
        events = events.withColumn("origin_payload", F.lit(None).cast("string"))
        filter_stage = StageSpec(type="filter", config={"pattern": PATTERN})
        events = apply_transforms(events, [filter_stage])
        check = SINK_CHECKS.get("kafka")
        if check is not None:
            with failing_stage("sink"):
                events = check(events, SINK)
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
        "off": bench_query(source, discovery=False),
        "on": bench_query(source, discovery=True),
    }
    if args.explain:
        cases["on"].explain("formatted")
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
    (wall_off, cpu_off), (wall_on, cpu_on) = medians["off"], medians["on"]
    print(
        f"discovery on/off throughput: wall {wall_off / wall_on:.3f}, cpu {cpu_off / cpu_on:.3f}"
        " (target >= 0.95)"
    )
    paired = [a.cpu / b.cpu for a, b in zip(runs["off"], runs["on"], strict=True)]
    print(f"median of the rounds' on/off cpu throughput: {statistics.median(paired):.3f}")
    spark.stop()


if __name__ == "__main__":
    main()
