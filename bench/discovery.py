"""The cost of schema discovery per source (target: on/off at least 0.95x).

``python -m bench.discovery [--events N] [--repeat R]`` (also the end of ``make bench``)

Discovery samples every source beside its channel's query, never in it
(:class:`pipelines.discovery.SourceSampler`): the query is the same with discovery on or off
(checked here: :mod:`pipelines.builder` takes no discovery input, and the query of a Kafka,
a generator and a files channel holds no ``observe``). What discovery costs is one small batch
job every ``SAMPLE_SECONDS`` in the channel's driver:

* Kafka: read the last record of each partition, parse it with the source's code, write its
  JSON (timed on ``KAFKA_SAMPLE_PARTITIONS`` of the bench records, as the Kafka read returns
  them; the fetch itself not counted);
* generator: make two events from the generator's config;
* files: read the first lines of the two newest files (two files of ``--file-lines`` bench
  events here) through the files source's parsing; a files channel runs it only when a newer
  file arrived, this counts it every interval.

Each job is timed ``--repeat`` times (JVM and Python CPU, after ``--warmup`` untimed runs) and
throughput on/off is stated as ``1 - job CPU / SAMPLE_SECONDS``: what a core saturated by the
channel gives the job every interval. The bench query (:mod:`bench.stage_counts`'s, Kafka
records → filter → Kafka records) is timed too, for scale.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.stage_counts import bench_query
from bench.stages import SINK, SOURCE, Timing, jvm_cpu_seconds, records, session, time_write
from bench.workload import PATTERN, make_event
from pipelines import builder
from pipelines.discovery import (
    KAFKA_SAMPLE_PARTITIONS,
    SAMPLE_SECONDS,
    files_samples,
    generator_samples,
    healthy_json,
    newest_files,
)
from pipelines.errors import capturing_failed_events
from pipelines.query import build_events
from pipelines.sources.kafka import kafka_records_to_events
from pipelines.spec import parse_stage_config, validate_spec
from pipelines.spec.paths import FILES_ROOTS_ENV

TARGET = 0.95


def kafka_job(records: DataFrame) -> Callable[[], list[dict[str, Any]]]:
    """What :func:`pipelines.discovery.kafka_samples` runs after its Kafka read: the last
    records (one per partition) parsed by the source, healthy ones as JSON."""
    # The records a Kafka read of [offset - 1, offset) per partition returns: a few rows
    # already in the driver's reach (not a scan of the whole bench set).
    rows = records.orderBy(F.col("offset").desc()).limit(KAFKA_SAMPLE_PARTITIONS).collect()
    newest = records.sparkSession.createDataFrame(rows, records.schema)

    def job() -> list[dict[str, Any]]:
        with capturing_failed_events(False):
            return healthy_json(kafka_records_to_events(newest, SOURCE))

    return job


def specs(inbox: Path) -> dict[str, Any]:
    """The bench channel, a generator channel and a files channel (same filter and sink)."""
    rest = {
        "transforms": [{"type": "filter", "config": {"pattern": PATTERN}}],
        "sink": {"type": "kafka", "config": SINK.model_dump(exclude_none=True)},
    }
    sources = {
        "kafka": {"type": "kafka", "config": SOURCE.model_dump(exclude_none=True)},
        "generator": {"type": "generator", "config": {"rate": 1000}},
        "files": {"type": "files", "config": {"path": str(inbox)}},
    }
    return {name: validate_spec({"source": source, **rest}) for name, source in sources.items()}


def write_files(inbox: Path, lines: int) -> None:
    """Two JSON lines files of bench events, the second newer."""
    rng = random.Random(1)
    for index in range(2):
        path = inbox / f"events-{index}.jsonl"
        with path.open("wb") as out:
            for seq in range(lines):
                out.write(make_event(index * lines + seq, rng) + b"\n")
        os.utime(path, ns=(time.time_ns() + index, time.time_ns() + index))


def no_observe(spark: SparkSession, spec: Any) -> bool:
    """Whether the channel's events (as the driver builds them) hold no ``observe``."""
    with capturing_failed_events(False):
        events = build_events(spark, spec)
    return "CollectMetrics" not in events._jdf.queryExecution().analyzed().toString()


def time_job(spark: SparkSession, job: Callable[[], list[dict[str, Any]]]) -> Timing:
    """Wall and CPU seconds of one sampling job (the JVM's and this Python process's)."""
    cpu = jvm_cpu_seconds(spark) + time.process_time()
    wall = time.perf_counter()
    sampled = job()
    if not sampled:
        raise RuntimeError("the sampling job sampled no event")
    return Timing(time.perf_counter() - wall, jvm_cpu_seconds(spark) + time.process_time() - cpu)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2, help="untimed runs first (JIT)")
    parser.add_argument("--file-lines", type=int, default=50_000)
    args = parser.parse_args(argv)

    workdir = Path(tempfile.mkdtemp(prefix="sluice-bench-discovery-"))
    inbox = workdir / "in"
    inbox.mkdir()
    os.environ[FILES_ROOTS_ENV] = str(workdir)
    write_files(inbox, args.file_lines)
    spark = session()
    try:
        run(spark, args, inbox)
    finally:
        spark.stop()


def run(spark: SparkSession, args: argparse.Namespace, inbox: Path) -> None:
    channels = specs(inbox)
    unchanged = "discovery" not in inspect.signature(builder.build_stream).parameters
    for name, spec in channels.items():
        same = unchanged and no_observe(spark, spec)
        print(f"{name} channel's query is the same with discovery on or off: {same}")
    source = records(spark, args.events)
    files_config = parse_stage_config("source", channels["files"].source)
    generator_config = parse_stage_config("source", channels["generator"].source)
    jobs = {
        "kafka": kafka_job(source),
        "generator": lambda: generator_samples(spark, generator_config, 7),
        "files": lambda: files_samples(spark, files_config, newest_files(files_config)),
    }
    query = bench_query(source, count_stages=False)
    for _ in range(args.warmup):  # code generation, JIT, file cache
        time_write(query)
        for job in jobs.values():
            time_job(spark, job)
    timings: dict[str, list[Timing]] = {name: [] for name in jobs}
    queries: list[Timing] = []
    for round_ in range(args.repeat):
        queries.append(time_write(query))
        for name, job in jobs.items():
            timings[name].append(time_job(spark, job))
        line = ", ".join(f"{n} {t[-1].cpu:.3f}s" for n, t in timings.items())
        print(f"round {round_}: query cpu {queries[-1].cpu:.2f}s; sampling jobs cpu {line}")
    query_cpu = statistics.median(t.cpu for t in queries)
    print(f"bench query: {args.events / query_cpu:,.0f} events per CPU second (for scale)")
    results = {}
    for name, runs in timings.items():
        wall = statistics.median(t.wall for t in runs)
        cpu = statistics.median(t.cpu for t in runs)
        ratio = 1 - cpu / SAMPLE_SECONDS
        results[name] = {"job_wall_s": wall, "job_cpu_s": cpu, "on_off": ratio}
        print(
            f"discovery on/off throughput, {name} channel: {ratio:.3f} (target >= {TARGET}; "
            f"sampling job {cpu:.3f}s CPU, {wall:.3f}s wall, every {SAMPLE_SECONDS:.0f}s)"
        )
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(json.dumps({"discovery": results}))


if __name__ == "__main__":
    main()
