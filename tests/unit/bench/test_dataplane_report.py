"""The data-plane benchmark's arguments and report (bench/dataplane.py): the contenders chosen,
the drain table with its columns, the ratios against the peers and the settings lines."""

from __future__ import annotations

import os

import pytest

from bench.dataplane import (
    CONTENDERS,
    Latency,
    PassThrough,
    Results,
    Throughput,
    parse_args,
    report,
)
from bench.mirror import Drain


def drain(rate: float, cpu_rate: float, rss_mib: int = 500, startup: float = 3.0) -> Drain:
    events = 1_000_000
    return Drain(
        events=events,
        wall=startup + events / rate,
        drain=events / rate,
        startup=startup,
        cpu=events / cpu_rate,
        peak_rss=rss_mib << 20,
        written=140_000,
    )


def results() -> Results:
    r = Results(events=1_000_000, event_bytes=500, expected_out=140_000)
    r.drains["sluice-2"] = PassThrough("Sluice, 2 cores", [drain(100_000, 60_000, 850)])
    r.drains["flink"] = PassThrough(
        "Flink 2.2.1, parallelism 2",
        [drain(150_000, 100_000), drain(200_000, 110_000, 700), drain(180_000, 105_000)],
    )
    r.drains["kstreams"] = PassThrough("Kafka Streams 4.3.1, 2 threads", [drain(160_000, 80_000)])
    r.throughput["loop"] = Throughput("(b) Python loop", 300_000, 10.0, 42_000)
    r.latency["sluice-2"] = Latency("Sluice, 2 cores", 200_000, 190.0, 350.0)
    r.latency["sluice-rtm"] = Latency("Sluice, real-time mode (60 s)", 200_000, 3.0, 9.0)
    r.latency["flink"] = Latency("Flink 2.2.1, parallelism 2", 200_000, 2.0, 6.0)
    r.settings = {"sluice-2": "local[2]", "flink": "no checkpoints"}
    return r


def test_only_peers_runs_the_peers_and_sluice_on_two_cores_with_latency() -> None:
    args = parse_args(["--only", "peers"])
    peers = {"flink", "flink-ckpt", "kstreams", "kstreams-eos"}
    # Sluice in both modes: drained (micro-batch, real-time) and paced (real-time's latency)
    assert args.chosen == {"sluice-2", "sluice-rt-2", "sluice-rtm", *peers}
    assert not args.skip_throughput
    assert not args.skip_latency


def test_contenders_pick_a_subset_and_refuse_unknown_names() -> None:
    assert parse_args(["--contenders", "flink,sluice-2"]).chosen == {"flink", "sluice-2"}
    assert {"flink", "flink-ckpt", "kstreams", "kstreams-eos"} <= set(CONTENDERS)
    with pytest.raises(SystemExit):
        parse_args(["--contenders", "storm"])


def test_latency_only_keeps_the_latency_peers() -> None:
    args = parse_args(["--only", "latency"])
    assert {"flink", "kstreams"} <= args.chosen
    assert "flink-ckpt" not in args.chosen
    assert args.skip_throughput


def test_the_drain_table_shows_rates_cpu_memory_start_up_and_runs() -> None:
    lines = report(results()).splitlines()
    header = next(line for line in lines if line.startswith("Kafka → filter → CloudEvents"))
    for column in ("events/s", "ev/CPU s", "2nd half/s", "peak RSS MiB", "start-up s", "runs"):
        assert column in header
    flink = next(line for line in lines if line.startswith("Flink 2.2.1, parallelism 2  "))
    # the median run by rate (180,000 events/s), its CPU rate and memory, then every run
    # (the second half's rates are 0: not measured in these runs)
    assert flink.split()[4:11] == ["180,000", "105,000", "0", "0", "-", "500", "3.0"]
    assert flink.endswith("150,000 200,000 180,000")
    sluice = next(line for line in lines if line.startswith("Sluice, 2 cores  "))
    assert "850" in sluice.split()
    assert lines.index(sluice) < lines.index(flink)  # Sluice first, then the peers


def test_the_ratios_against_the_peers_carry_their_targets() -> None:
    text = report(results())
    assert (
        "Sluice, 2 cores / Flink 2.2.1, parallelism 2: 0.56x events/s (target >= 1.0x), "
        "0.57x events per CPU-second" in text
    )
    assert (
        "Sluice, 2 cores / Kafka Streams 4.3.1, 2 threads: 0.75x events per CPU-second "
        "(target >= 1.0x), 0.62x events/s" in text
    )
    assert (
        "Sluice, real-time mode (60 s) / Flink 2.2.1, parallelism 2: p99 1.50x (target <= 1.0x)"
        in text
    )
    assert "Sluice, 2 cores (micro-batch): p99 350 ms (target <= 200 ms)" in text
    assert "Sluice, 2 cores / (b) Python loop: 3.33x events/s (target >= 3x)" in text


def test_each_contender_s_settings_are_printed() -> None:
    text = report(results())
    settings = text[text.index("\nsettings\n") :]
    assert "  sluice-2: local[2]" in settings
    assert "  flink: no checkpoints" in settings


def test_a_report_without_peers_leaves_their_lines_out() -> None:
    r = Results(events=10, event_bytes=500, expected_out=1)
    text = report(r)
    assert "Flink" not in text
    assert "filter → CloudEvents" not in text


def test_drains_rotate_note_a_failed_run_and_keep_the_others(monkeypatch) -> None:
    from bench import dataplane

    calls: list[str] = []

    def fake_drain(key, args, bootstrap, source, events, expected):
        calls.append(key)
        if key == "kstreams" and calls.count(key) == 1:
            raise RuntimeError("broker went away")
        return drain(100_000, 50_000)

    monkeypatch.setattr(dataplane, "drain_once", fake_drain)
    monkeypatch.setattr(dataplane, "fetch_peer_jars", lambda: None)
    monkeypatch.setattr(dataplane, "end_offsets_total", lambda bootstrap, topic: 1_000_000)
    args = parse_args(["--contenders", "sluice-2,flink,kstreams", "--repeat", "2"])
    r = Results(events=1_000_000, event_bytes=500, expected_out=140_000)
    dataplane.measure_drains(args, r, "b:1", "bench-in")

    assert calls == ["sluice-2", "flink", "kstreams", "flink", "kstreams", "sluice-2"]
    assert [len(r.drains[key].runs) for key in ("sluice-2", "flink", "kstreams")] == [2, 2, 1]
    assert any("run 1 of kstreams failed: broker went away" in note for note in r.notes)
    assert set(r.settings) == {"sluice-2", "flink", "kstreams"}


def test_the_second_half_of_a_drain_is_its_warm_rate() -> None:
    cold = drain(100_000, 60_000)
    warm = Drain(**{**cold.__dict__, "second_half": 2.0, "second_half_cpu": 2.5})
    assert warm.steady_rate == 250_000  # 500,000 events in 2 s
    assert warm.steady_cpu_rate == 200_000
    assert cold.steady_rate == 0.0  # not measured

    r = results()
    r.drains["sluice-2"].runs[0] = warm
    flink = r.drains["flink"]
    flink.runs = [
        Drain(**{**run.__dict__, "second_half": 1.0, "second_half_cpu": 2.0}) for run in flink.runs
    ]
    text = report(r)
    assert "2nd half/s" in text
    assert (
        "second half (warm): Sluice, 2 cores / Flink 2.2.1, parallelism 2: 0.50x events/s, "
        "0.80x events per CPU-second" in text
    )


def test_the_drain_table_shows_the_share_of_cpu_the_jit_took() -> None:
    r = results()
    sluice = r.drains["sluice-2"].runs[0]
    r.drains["sluice-2"].runs[0] = Drain(**{**sluice.__dict__, "jit_cpu": sluice.cpu * 0.4})
    line = next(row for row in report(r).splitlines() if row.startswith("Sluice, 2 cores"))
    assert "JIT CPU" in report(r)
    assert " 40%" in line
    assert sluice.jit_share == 0.0  # not measured


def test_jit_threads_are_told_apart_by_name_in_proc() -> None:
    from bench.mirror import _stat_fields, tree_cpu_and_jit

    comm, fields = _stat_fields("4242 (C2 CompilerThre) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0")
    assert comm == "C2 CompilerThre"
    assert fields[11:13] == ["250", "50"]  # utime, stime in clock ticks
    total, jit = tree_cpu_and_jit(os.getpid())  # a Python process: no JIT threads
    assert total > 0 and jit == 0.0
