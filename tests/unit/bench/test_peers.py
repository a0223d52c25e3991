"""The peers of the data-plane benchmark (bench/peers.py): their command lines and settings, as
``bench.dataplane`` drives them."""

from __future__ import annotations

from bench.peers import HEAP, PEERS, PEERS_JARS, latency_command, peer_command


def test_each_peer_runs_its_class_on_the_built_classpath_with_the_stated_heap() -> None:
    command = peer_command(PEERS["flink"], "--bootstrap", "b:1")
    assert command[:4] == ["java", HEAP, "-cp", f"{PEERS_JARS}/*"]
    assert command[4:] == ["io.sluice.bench.peers.FlinkPeer", "--bootstrap", "b:1"]
    assert peer_command(PEERS["kstreams"])[4] == "io.sluice.bench.peers.KafkaStreamsPeer"


def test_the_fairness_variants_add_their_switch_only() -> None:
    assert PEERS["flink"].flags == ()
    assert PEERS["flink-ckpt"].flags == ("--checkpoint-seconds", "10")
    assert PEERS["kstreams"].flags == ()
    assert PEERS["kstreams-eos"].flags == ("--exactly-once",)
    assert peer_command(PEERS["kstreams-eos"])[5:] == ["--exactly-once"]


def test_a_latency_command_runs_for_the_seconds_asked() -> None:
    command = latency_command(PEERS["flink-ckpt"], 57.0)
    assert command[-4:] == ["--checkpoint-seconds", "10", "--seconds", "57"]


def test_every_peer_states_its_settings() -> None:
    for peer in PEERS.values():
        assert peer.settings
    assert "no checkpoints" in PEERS["flink"].settings
    assert "30 s" in PEERS["kstreams"].settings
    assert "exactly-once" in PEERS["kstreams-eos"].settings
