"""What the enrich transform costs: events/s through it against a local server that answers at
once, per event and in batches, next to the same plan without it.

``python -m bench.enrich [--events N] [--repeat R] [--concurrency C]``

The server (``http.server`` in a process of its own, so it does not share the driver's
interpreter lock) answers ``{"tier": "gold"}`` per input, or an array of as many for an
array; its CPU time per run is reported too (the client and the server share the machine).
Each case runs the events (a batch DataFrame with the event columns, data
``{"n": i, "customer": "c<i>"}``) through ``enrich`` into the ``noop`` writer on
``local[1]``, and reports the median of ``--repeat`` runs after two warm-ups:

* ``baseline`` - no enrich (the cost of making the events);
* ``per-event`` - ``batch_size`` 1, no cache: one request per event;
* ``batch-50`` - ``batch_size`` 50, no cache;
* ``cached`` - ``batch_size`` 1 and a cache, 100 distinct customers (warm after the warm-up).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import socket
import statistics
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.cloudevents import EVENT_COLUMNS
from pipelines.errors import no_failure
from pipelines.net import ENRICH_ALLOW_ENV
from pipelines.spec.configs.enrich import EnrichConfig
from pipelines.transforms.enrich import enrich_events
from runtime_adapter.config import RuntimeConfig


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body go out in two writes: without this, Nagle's algorithm holds the body
    # until the client's delayed ACK (40 ms), which would measure the server, not the stage
    disable_nagle_algorithm = True

    def do_POST(self) -> None:
        asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        one = {"tier": "gold"}
        body = json.dumps([one] * len(asked) if isinstance(asked, list) else one).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _serve(port: int) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    server.daemon_threads = True
    server.serve_forever()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def session() -> SparkSession:
    return (
        SparkSession.builder.master("local[1]")
        .appName("sluice-bench-enrich")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.jars", ",".join(str(p) for p in RuntimeConfig.from_env().spark_jars()))
        .getOrCreate()
    )


def events(spark: SparkSession, count: int, customers: int | None) -> DataFrame:
    """``count`` events now, one partition; ``customers`` distinct customers (else all)."""
    customer = "id" if customers is None else f"id % {customers}"
    columns = {
        "id": "concat('bench/0/', id)",
        "source": "'bench'",
        "specversion": "'1.0'",
        "type": "'bench.order'",
        "subject": "CAST(NULL AS STRING)",
        "time": "current_timestamp()",
        "datacontenttype": "'application/json'",
        "dataschema": "CAST(NULL AS STRING)",
        "extensions": "CAST(map() AS map<string,variant>)",
        "data": f"parse_json(concat('{{\"n\": ', id, ', \"customer\": \"c', {customer}, '\"}}'))",
        "origin_topic": "'bench'",
        "origin_partition": "0",
        "origin_offset": "id",
        "origin_timestamp": "current_timestamp()",
        "origin_payload": "CAST(NULL AS STRING)",
    }
    frame = spark.range(count, numPartitions=1)
    selected = [F.expr(columns[name]).alias(name) for name in EVENT_COLUMNS if name != "failure"]
    return frame.select(*selected, no_failure().alias("failure"))


WARM_UPS = 2


def timed(frame_of: Any, repeat: int) -> float:
    """Median seconds of writing ``frame_of()`` to ``noop``, after :data:`WARM_UPS` runs."""
    runs = []
    for attempt in range(repeat + WARM_UPS):
        frame = frame_of()
        started = time.perf_counter()
        frame.write.format("noop").mode("overwrite").save()
        if attempt >= WARM_UPS:
            runs.append(time.perf_counter() - started)
    return statistics.median(runs)


def cpu_seconds(pid: int | None) -> float:
    """CPU time (user + system) process ``pid`` has used so far (Linux's /proc)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()

    port = _free_port()
    server = multiprocessing.get_context("spawn").Process(target=_serve, args=(port,), daemon=True)
    server.start()
    os.environ[ENRICH_ALLOW_ENV] = "127.0.0.1"
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the workers need pyarrow
    url = f"http://127.0.0.1:{port}/lookup"
    spark = session()
    try:
        cases: dict[str, tuple[dict[str, Any] | None, int | None]] = {
            "baseline": (None, None),
            "per-event": ({"batch_size": 1}, None),
            "batch-50": ({"batch_size": 50}, None),
            "cached": ({"batch_size": 1, "cache": {"ttl_seconds": 600}}, 100),
        }
        print(f"{args.events} events, local[1], max_concurrency {args.concurrency}")
        print(
            f"{'case':<10} {'seconds':>8} {'events/s':>10} {'µs/event over baseline':>24} "
            f"{'server CPU s/run':>17}"
        )
        baseline = None
        for name, (extra, customers) in cases.items():

            def frame_of(extra: Any = extra, customers: Any = customers) -> DataFrame:
                frame = events(spark, args.events, customers)
                if extra is None:
                    return frame
                config = EnrichConfig.model_validate(
                    {
                        "url": url,
                        "input": "$.data.customer",
                        "into": "data.customer_info",
                        "max_concurrency": args.concurrency,
                        **extra,
                    }
                )
                return enrich_events(frame, config)

            server_cpu = cpu_seconds(server.pid)
            seconds = timed(frame_of, args.repeat)
            server_cpu = (cpu_seconds(server.pid) - server_cpu) / (args.repeat + WARM_UPS)
            baseline = seconds if baseline is None else baseline
            over = (seconds - baseline) / args.events * 1e6
            print(
                f"{name:<10} {seconds:>8.3f} {args.events / seconds:>10.0f} {over:>24.1f} "
                f"{server_cpu:>17.2f}"
            )
    finally:
        spark.stop()
        server.terminate()


if __name__ == "__main__":
    main()
