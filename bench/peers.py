"""The data-plane benchmark's peers: the bench channel's work in Apache Flink and Kafka Streams.

What a team weighing Sluice for "Kafka → filter → CloudEvents → Kafka" would pick instead,
written as their users would write it (the Maven module ``bench/peers/``, built from Maven
Central by ``scripts/fetch-jars.sh bench-peers`` into ``.cache/jars/bench-peers``):

* **Flink** 2.2.1 DataStream in a local mini-cluster inside one JVM, parallelism 2:
  KafkaSource → one flatMap → KafkaSink, no checkpoints (``flink``) or a checkpoint every
  10 s to a file-system checkpoint directory with an at-least-once sink (``flink-ckpt``).
* **Kafka Streams** 4.3.1 (the broker's Kafka version), 2 stream threads: one processor
  between the topics, at-least-once with its default 30 s commit interval (``kstreams``) or
  exactly-once v2, transactions committed every 100 ms (``kstreams-eos``).

Both read the 2-partition source from the earliest offset, parse each value into a Jackson
tree, keep the events the benchmark pattern selects, write the CloudEvent Sluice's sink writes
(key ``topic/partition/offset``) with the producer settings of Sluice's Kafka sink (linger
5 ms, 256 KiB batches), and stamp each sink record with the time it is written (the
frameworks would carry the input record's timestamp, hiding the latency).

A throughput run (:func:`run_peer`) starts the peer on the backlog and times it from outside
like the other drains (:func:`bench.mirror.watch_drain`: first record written to the last,
CPU and peak resident memory of its process tree, start-up apart), then stops it with
SIGTERM. A latency run is :func:`latency_command` handed to ``bench.dataplane.latency``: the
peer prints ``{"ready": true}`` once its job consumes, runs the given seconds and exits.

``python -m bench.peers flink --bootstrap B --source T --events N --expected M`` runs one drain
and prints JSON.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import uuid
from dataclasses import dataclass

from bench.mirror import Drain, counting_input, drain_command, fetch_jars, print_drain
from tests.support.processes import REPO_ROOT

PEERS_JARS = REPO_ROOT / ".cache" / "jars" / "bench-peers"
HEAP = "-Xmx1g"
"""Every peer's heap ceiling, as MirrorMaker 2's in this bench: enough for Flink's local
mini-cluster (its local defaults take 64 MiB of network buffers and 128 MiB of managed memory)
and Kafka Streams' record buffers with room to spare, and the same cap for both so that their
peak RSS compares what they keep rather than how far a default heap (a quarter of the machine's
memory) lets the collector wait."""
PACKAGE = "io.sluice.bench.peers"
PRODUCER = "producer linger 5 ms, batch 256 KiB (Sluice's Kafka sink)"


@dataclass(frozen=True)
class Peer:
    """One peer configuration: the JVM class it runs and the switches it is given."""

    key: str
    name: str
    main: str
    flags: tuple[str, ...]
    settings: str
    """What the bench's report prints beside the figures."""
    transactional: bool = False
    """Whether its sink writes in transactions (a commit marker takes an offset)."""


PEERS = {
    peer.key: peer
    for peer in (
        Peer(
            "flink",
            "Flink 2.2.1, parallelism 2",
            "FlinkPeer",
            (),
            "local mini-cluster in one JVM, parallelism 2, no checkpoints (nothing committed: "
            f"the least durable), object reuse, {PRODUCER}, {HEAP}",
        ),
        Peer(
            "flink-ckpt",
            "Flink 2.2.1, checkpoint 10 s",
            "FlinkPeer",
            ("--checkpoint-seconds", "10"),
            "as flink, plus a checkpoint every 10 s to a file-system directory and an "
            "at-least-once sink (flushed at each checkpoint): a durable job",
        ),
        Peer(
            "kstreams",
            "Kafka Streams 4.3.1, 2 threads",
            "KafkaStreamsPeer",
            (),
            f"2 stream threads, at-least-once, commit every 30 s (its default), {PRODUCER}, {HEAP}",
        ),
        Peer(
            "kstreams-eos",
            "Kafka Streams 4.3.1, exactly-once",
            "KafkaStreamsPeer",
            ("--exactly-once",),
            "as kstreams, exactly-once v2: transactions committed every 100 ms (its default "
            "for exactly-once); its sink's offsets include the commit markers",
            transactional=True,
        ),
    )
}


def fetch_peer_jars() -> None:
    """The peers' classpath (``bench-peers``), built the first time."""
    fetch_jars("bench-peers")


def peer_command(peer: Peer, *args: str) -> list[str]:
    """The ``java`` command line of ``peer`` with ``args`` (its topics, ``--seconds``)."""
    return [
        "java",
        HEAP,
        "-cp",
        f"{PEERS_JARS}/*",
        f"{PACKAGE}.{peer.main}",
        *peer.flags,
        *args,
    ]


def latency_command(peer: Peer, seconds: float) -> list[str]:
    """For ``bench.dataplane.latency``, which appends ``--bootstrap``, ``--source`` and
    ``--sink``: the peer runs ``seconds`` after it prints ``{"ready": true}``, then exits."""
    return peer_command(peer, "--seconds", f"{seconds:g}")


def run_peer(
    peer: Peer,
    bootstrap: str,
    source: str,
    sink: str,
    *,
    events: int,
    expected: int,
    timeout: float = 300,
) -> Drain:
    """One drain of ``source`` (``events`` records, ``expected`` of them selected) by ``peer``
    into ``sink`` (made by the caller); rates counted in the source's events. The jars are
    the caller's to fetch first (:func:`fetch_peer_jars`), outside every timed run."""
    command = peer_command(peer, "--bootstrap", bootstrap, "--source", source, "--sink", sink)
    drain, _ = drain_command(command, bootstrap, sink, expected, timeout, peer.name)
    return counting_input(drain, events)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="One drain of the backlog by a peer")
    parser.add_argument("peer", choices=sorted(PEERS))
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--events", type=int, required=True, help="records in the source")
    parser.add_argument("--expected", type=int, required=True, help="records selected")
    args = parser.parse_args(argv)
    from bench.dataplane import create_topic  # the bench's own helper (it imports this module)

    expected = args.expected
    fetch_peer_jars()
    sink = f"out-{args.peer}-{uuid.uuid4().hex[:6]}"
    create_topic(args.bootstrap, sink, 1)
    print_drain(
        run_peer(
            PEERS[args.peer],
            args.bootstrap,
            args.source,
            sink,
            events=args.events,
            expected=expected,
        )
    )


if __name__ == "__main__":
    os.chdir(REPO_ROOT)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally: stop the child
    main()
