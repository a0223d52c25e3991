"""A Sluice shared driver for :mod:`bench.memory`, hosting the bench channels it is told to.

:mod:`bench.memory` starts it with the runtime worker's own ``spark-submit`` command line
(:meth:`runtime_adapter.host.worker.RuntimeWorker.driver_command`: driver memory, listeners,
plugins, jars, Spark options) in place of ``runtime_adapter/host/driver.py``, and with the
worker's environment. It starts its SparkSession as that driver does
(:meth:`runtime_adapter.host.driver.DriverHost.start_spark`) and hosts each channel as a
hosted connector does: its own session from
:meth:`runtime_adapter.host.hosted.HostedConnector.session` (hardened, the runtime's polling
delay, stop timeout, SQL and checkpoint options), its own scheduler pool, the query
:func:`pipelines.builder.build_stream` builds from the bench channel's spec
(:func:`bench.spark_job.sluice_spec`: Kafka (json) → filter → Kafka (CloudEvents)), the
channel's consumer-group committer (:class:`runtime_adapter.kafka.GroupCommitter`: a client
in the Python process) and a thread reading its progress every
:data:`~runtime_adapter.host.hosted.ACTIVE_INTERVAL`. What it leaves out: Redis, status
reports and the placement files (the Python side of the runtime's bookkeeping).

It is driven through files in ``--control``: the bench writes ``want.json``
(``{"step": N, "channels": [{"id", "source", "sink"}, ...]}``, every channel to run by then; a
channel may also say ``"max_events_per_trigger"``, or ``"session_only": true`` for its session
without a query), the driver starts those not running yet and writes ``have.json``
(``{"step": N, "active": K}``, or ``{"error": ...}``). ``{"stop": true}`` ends it (so does
SIGTERM). ``--session-conf spark.NAME=VALUE`` (repeatable) is set in each channel's session.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

CONTROL_POLL = 0.2
"""Seconds between two looks at ``want.json``."""


def write_json(path: Path, data: dict[str, Any]) -> None:
    """``data`` written to ``path`` whole or not at all (a rename)."""
    partial = path.with_suffix(".tmp")
    partial.write_text(json.dumps(data))
    partial.replace(path)


class Channel:
    """One hosted bench channel: its session, query, committer and progress-reading thread (or
    its session alone, ``"session_only"``: what the session costs apart from the query)."""

    def __init__(self, spark: Any, config: Any, channel: dict[str, Any], args: Any) -> None:
        from runtime_adapter.host.hosted import HostedConnector
        from runtime_adapter.kafka import GroupCommitter, consumer_group

        cid = channel["id"]
        self.hosted = HostedConnector(
            None,  # type: ignore[arg-type]  # no store: its session is all that is used
            config,
            connector_id=cid,
            worker_id="bench-memory",
            generation=1,
            spark=spark,
        )
        session = self.hosted.session()
        for setting in args.session_conf or ():  # an experiment's (bench.memory --session-conf)
            key, value = setting.split("=", 1)
            session.conf.set(key, value)
        self.query: Any = None
        self.committer: Any = None
        self.stop = threading.Event()
        if channel.get("session_only"):
            return
        self.query = start_query(session, config, channel, args)
        self.committer = GroupCommitter(args.bootstrap, consumer_group(cid))
        self.thread = threading.Thread(target=self.poll, name=f"connector-{cid}", daemon=True)
        self.thread.start()

    @property
    def active(self) -> bool:
        return self.query is None or bool(self.query.isActive)

    def poll(self) -> None:
        """What a hosted connector's thread reads while its query runs."""
        from runtime_adapter.host.hosted import ACTIVE_INTERVAL
        from runtime_adapter.host.progress import progress_dict

        while not self.stop.wait(ACTIVE_INTERVAL):
            try:
                if not self.query.isActive:
                    return
                progress_dict(self.query.lastProgress)
            except Exception:  # the driver is stopping
                return

    def close(self) -> None:
        self.stop.set()
        try:
            if self.query is not None:
                self.query.stop()
        finally:
            if self.committer is not None:
                self.committer.close(1.0)


def start_query(session: Any, config: Any, channel: dict[str, Any], args: Any) -> Any:
    """The bench channel's query in ``session``, started in a scheduler pool of its own."""
    from bench.spark_job import sluice_spec
    from pipelines.builder import build_stream
    from pipelines.spec import validate_spec

    spec_args = argparse.Namespace(
        mode="sluice",
        bootstrap=args.bootstrap,
        source=channel["source"],
        sink=channel["sink"],
        source_format=None,
        sink_format=None,
        max_offsets=channel.get("max_events_per_trigger"),
        source_prop=None,
        sink_prop=None,
        real_time=None,
    )
    writer = build_stream(
        session,
        validate_spec(sluice_spec(spec_args)),
        channel=channel["id"],
        checkpoint_dir=str(Path(args.checkpoints) / channel["id"]),
        count_stages=config.stage_counts,
    )
    session.sparkContext.setLocalProperty("spark.scheduler.pool", channel["id"])
    return writer.start()


def start_spark(config: Any) -> Any:
    """The driver's SparkSession, as :meth:`DriverHost.start_spark` starts it."""
    from pyspark.sql import SparkSession

    from pipelines.sql_guard import harden_session

    spark = SparkSession.builder.getOrCreate()
    harden_session(spark)
    spark.sparkContext.setLogLevel(config.spark_log_level)
    return spark


def serve(args: argparse.Namespace, stopping: threading.Event) -> None:
    from runtime_adapter.config import RuntimeConfig

    control = Path(args.control)
    config = RuntimeConfig.from_env()
    spark = start_spark(config)
    channels: dict[str, Channel] = {}
    write_json(control / "have.json", {"step": -1, "active": 0, "python_pid": os.getpid()})
    seen = ""
    try:
        while not stopping.is_set():
            want_path = control / "want.json"
            text = want_path.read_text() if want_path.exists() else ""
            if text and text != seen:
                seen = text
                want = json.loads(text)
                if want.get("stop"):
                    return
                try:
                    for channel in want["channels"]:
                        if channel["id"] not in channels:
                            channels[channel["id"]] = Channel(spark, config, channel, args)
                    active = sum(1 for c in channels.values() if c.active)
                    write_json(control / "have.json", {"step": want["step"], "active": active})
                except Exception:
                    write_json(control / "have.json", {"error": traceback.format_exc()[-4000:]})
            stopping.wait(CONTROL_POLL)
    finally:
        for channel in channels.values():
            try:
                channel.close()
            except Exception as exc:  # stop the others all the same
                print(f"stopping {channel.hosted.connector_id}: {exc}", file=sys.stderr)
        spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--control", required=True, help="folder of want.json / have.json")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--checkpoints", required=True)
    parser.add_argument(
        "--session-conf", action="append", help="spark.NAME=VALUE set in each channel's session"
    )
    args = parser.parse_args()
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    serve(args, stopping)


if __name__ == "__main__":
    main()
