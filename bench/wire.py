"""``make bench-wire`` (or ``python -m bench.wire``): Avro and Protobuf in Confluent's wire
format against JSON, on the same events.

Workload: the data-plane benchmark's order events (:mod:`bench.workload`, ~500 bytes of JSON)
in a 2-partition topic of a real Kafka broker started for the run, the same events as Avro
(``fastavro``, schemaless) behind magic byte 0 and their schema id, as confluent-kafka's
``AvroSerializer`` writes them, in a second topic, and as Protobuf (protobuf's Python
runtime) behind magic byte 0, the schema id and the message index [0], as its
``ProtobufSerializer`` writes them, in a third. Schemas come from a registry speaking
Confluent's REST API (a local HTTP server answering ``/subjects/…/versions``, which the driver
reads once, when the query is built; nothing per event). Each contender drains its backlog
(``available-now``, ``--per-trigger`` events per micro-batch) on 2 cores (``local[2]``, a
process of its own) after an untimed warm-up drain of a smaller topic, and is timed from its
query's start to its end, with its driver's CPU time:

* **json** - Kafka (json) → filter (the data-plane pattern) → Kafka (json);
* **avro** - Kafka (avro, registry) → the same filter → Kafka (avro, registry);
* **protobuf** - Kafka (protobuf, registry) → the same filter → Kafka (protobuf, registry),
  through Sluice's ``protobuf_decode`` / ``protobuf_encode`` (protobuf-java).

Prints the figures and the ratios (target: each wire format at least 1x json's events/s) and
saves them to ``bench-results/``.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.bus import Results, Run, jvm_cpu_seconds
from bench.workload import PATTERN, make_event, selected
from tests.support.http_server import Answer, RecordingServer, Request
from tests.support.processes import REPO_ROOT, start_kafka

PARTITIONS = 2
CORES = 2
CONTENDERS = ("json", "avro", "protobuf")
WIRE_CONTENDERS = ("avro", "protobuf")
ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "bench",
    "fields": [
        {"name": "seq", "type": "long"},
        {"name": "produced_at_ms", "type": "long"},
        {"name": "amount", "type": "double"},
        {"name": "region", "type": "string"},
        {"name": "status", "type": "string"},
        {"name": "customer", "type": "string"},
        {"name": "note", "type": "string"},
    ],
}
SCHEMA_IDS = {
    **{f"wire-{c}-{n}-value": 1 for c in WIRE_CONTENDERS for n in ("in", "warm")},
    **{f"wire-{c}-out-value": 2 for c in WIRE_CONTENDERS},
}


def order_file() -> Any:
    """The Order record as a proto3 file (the same fields, in the same order, as ``ORDER``)."""
    from google.protobuf import descriptor_pb2

    types = {"long": "TYPE_INT64", "double": "TYPE_DOUBLE", "string": "TYPE_STRING"}
    proto = descriptor_pb2.FileDescriptorProto(name="order.proto", package="bench")
    proto.syntax = "proto3"
    message = proto.message_type.add(name="Order")
    field = descriptor_pb2.FieldDescriptorProto
    for number, avro_field in enumerate(ORDER["fields"], start=1):
        message.field.add(
            name=avro_field["name"],
            number=number,
            type=field.Type.Value(types[avro_field["type"]]),
            label=field.LABEL_OPTIONAL,
        )
    return proto


def order_message_class() -> Any:
    """A message class built at run time (no protoc here), as generated code is."""
    from google.protobuf import descriptor_pool, message_factory

    pool = descriptor_pool.DescriptorPool()
    pool.Add(order_file())
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("bench.Order"))


def registry_answer(request: Request) -> Answer:
    """Confluent's answers for the two calls a driver makes per subject."""
    parts = request.path.strip("/").split("/")  # subjects/<subject>/versions[/1]
    if len(parts) < 3 or parts[0] != "subjects" or parts[1] not in SCHEMA_IDS:
        return Answer(404, b'{"error_code": 40401, "message": "Subject not found."}')
    if len(parts) == 3:
        return Answer(200, b"[1]")
    body: dict[str, Any] = {"subject": parts[1], "version": 1, "id": SCHEMA_IDS[parts[1]]}
    if parts[1].startswith("wire-protobuf-"):
        text = base64.b64encode(order_file().SerializeToString()).decode("ascii")
        body.update(schemaType="PROTOBUF", schema=text)
    else:
        body["schema"] = json.dumps(ORDER)
    return Answer(200, json.dumps(body).encode())


def spec(contender: str, bootstrap: str, source: str, per_trigger: int) -> dict[str, Any]:
    fmt = {} if contender == "json" else {"format": contender}
    return {
        "source": {
            "type": "kafka",
            "config": {
                "bootstrap_servers": bootstrap,
                "topics": [source],
                "starting_offsets": "earliest",
                "max_events_per_trigger": per_trigger,
                **fmt,
            },
        },
        "transforms": [{"type": "filter", "config": {"pattern": PATTERN}}],
        "sink": {
            "type": "kafka",
            "config": {"bootstrap_servers": bootstrap, "topic": f"wire-{contender}-out", **fmt},
        },
        "runtime": {"mode": "available-now"},
    }


def run_contender(args: argparse.Namespace) -> None:
    """Warm up, then drain the measured backlog in the same driver; print one JSON line."""
    from bench.spark_job import session
    from pipelines.builder import build_stream
    from pipelines.spec import validate_spec

    spark = session(CORES)
    jvm = spark._jvm
    assert jvm is not None
    pid = int(jvm.java.lang.ProcessHandle.current().pid())
    checkpoints = Path(tempfile.mkdtemp(prefix="sluice-bench-wire-"))

    def drain(source: str, name: str) -> int:
        writer = build_stream(
            spark,
            validate_spec(spec(args.run, args.bootstrap, source, args.per_trigger)),
            channel=f"bench-wire-{name}",
            checkpoint_dir=str(checkpoints / name),
        )
        query = writer.start()
        query.awaitTermination()
        return sum(max(int(p["sink"].get("numOutputRows", 0)), 0) for p in query.recentProgress)

    drain(f"wire-{args.run}-warm", "warm")
    cpu, python_cpu = jvm_cpu_seconds(pid), time.process_time()
    started = time.perf_counter()
    written = drain(f"wire-{args.run}-in", "measured")
    seconds = time.perf_counter() - started
    cpu = jvm_cpu_seconds(pid) - cpu + time.process_time() - python_cpu
    print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "written": written}), flush=True)
    spark.stop()
    shutil.rmtree(checkpoints, ignore_errors=True)


def produce_backlogs(bootstrap: str, name: str, count: int) -> int:
    """The same events to ``wire-json-<name>`` (JSON), ``wire-avro-<name>`` (Avro in the wire
    format, schema id 1) and ``wire-protobuf-<name>`` (Protobuf in the wire format, schema id
    1, message index [0]); returns how many the pattern selects."""
    import fastavro
    from confluent_kafka import Producer

    parsed = fastavro.parse_schema(ORDER)
    order_class = order_message_class()
    header = b"\x00" + struct.pack(">I", 1)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    rng = random.Random(0)
    wanted = 0
    for seq in range(count):
        value = make_event(seq, rng, produced_at_ms=0)
        order = json.loads(value)
        wanted += selected(order)
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, order)
        for topic, payload in (
            (f"wire-json-{name}", value),
            (f"wire-avro-{name}", header + out.getvalue()),
            (f"wire-protobuf-{name}", header + b"\x00" + order_class(**order).SerializeToString()),
        ):
            while True:
                try:
                    producer.produce(topic, payload, partition=seq % PARTITIONS)
                    break
                except BufferError:
                    producer.poll(0.1)
        if seq % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    return wanted


def create_topics(bootstrap: str, names: list[str]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(n, PARTITIONS, 1) for n in names]).values():
        future.result(30)


def report(results: Results, wanted: int, load_before: str) -> str:
    lines = [
        f"Wire-format benchmark: {results.events:,} order events (~500 bytes as JSON), "
        f"{PARTITIONS} partitions, {results.per_trigger:,} events per micro-batch, {CORES} cores "
        f"per contender, each warmed up on {results.warm_events:,} events first (untimed); "
        f"{wanted:,} events pass the filter; load average before: {load_before}",
        "",
        f"{'contender':<10} {'seconds':>8} {'events/s':>10} {'events/CPU-s':>13} {'written':>10}",
    ]
    for contender in CONTENDERS:
        run = results.median(contender)
        if run is not None:
            lines.append(
                f"{contender:<10} {run.seconds:>8.1f} {run.rate:>10,.0f} "
                f"{run.per_cpu_second:>13,.0f} {run.written:>10,}"
            )
    plain = results.median("json")
    lines.append("")
    for contender in WIRE_CONTENDERS:
        wired = results.median(contender)
        if wired and plain:
            ratio = wired.rate / plain.rate
            per_cpu = wired.per_cpu_second / plain.per_cpu_second
            lines.append(
                f"{contender} vs json: {ratio:.2f}x events/s ({per_cpu:.2f}x per CPU-second); "
                f"target ≥ 1x: {'met' if ratio >= 1 else 'NOT met'}"
            )
    lines.extend(f"note: {note}" for note in results.notes)
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=int(os.environ.get("BENCH_EVENTS", 200_000)))
    parser.add_argument("--per-trigger", type=int, default=50_000)
    parser.add_argument("--warm-events", type=int, default=50_000)
    parser.add_argument(
        "--only", action="append", choices=CONTENDERS, help="run only these (repeatable)"
    )
    parser.add_argument("--run", choices=CONTENDERS, help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.run:
        run_contender(args)
        return
    contenders = [c for c in CONTENDERS if not args.only or c in args.only]
    workdir = Path(tempfile.mkdtemp(prefix="sluice-bench-wire-"))
    kafka, bootstrap = start_kafka(workdir / "kafka", workdir / "logs")
    try:
        create_topics(
            bootstrap, [f"wire-{c}-{n}" for c in CONTENDERS for n in ("in", "warm", "out")]
        )
        started = time.perf_counter()
        wanted = produce_backlogs(bootstrap, "in", args.events)
        produce_backlogs(bootstrap, "warm", args.warm_events)
        print(f"produced {args.events:,} events twice in {time.perf_counter() - started:.1f}s")
        results = Results(args.events, args.per_trigger, args.warm_events)
        load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3])
        results.notes.append(f"load average before: {load_before}")
        with RecordingServer(registry_answer) as registry:
            env = {**os.environ, "SLUICE_SCHEMA_REGISTRY_URL": registry.url}
            for contender in contenders:
                print(f"running {contender} …", flush=True)
                command = [
                    sys.executable, "-m", "bench.wire", "--run", contender,
                    "--bootstrap", bootstrap, "--per-trigger", str(args.per_trigger),
                ]  # fmt: skip
                done = subprocess.run(
                    command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1800
                )
                line = next(
                    (x for x in reversed(done.stdout.splitlines()) if x.startswith("{")), None
                )
                if done.returncode or line is None:
                    results.notes.append(f"{contender} failed: {done.stderr[-2000:]}")
                    print(done.stderr[-3000:], flush=True)
                    continue
                run = Run(contender, args.events, **json.loads(line))
                results.runs[contender] = [run]
                if run.written != wanted:
                    results.notes.append(f"{contender} wrote {run.written:,}, expected {wanted:,}")
        text = report(results, wanted, load_before)
        print(text)
        directory = REPO_ROOT / "bench-results"
        directory.mkdir(exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S")
        (directory / f"wire-{stamp}.json").write_text(json.dumps(asdict(results), indent=2))
        (directory / f"wire-{stamp}.txt").write_text(text + "\n")
    finally:
        kafka.stop()
        shutil.rmtree(workdir, ignore_errors=True)  # the broker's log


if __name__ == "__main__":
    main()
