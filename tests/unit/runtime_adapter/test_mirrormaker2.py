"""MirrorMaker 2's offsets records, as Kafka Connect writes them (no Kafka needed here; the real
MM2 run is tests/integration/test_mirrormaker2.py)."""

from __future__ import annotations

import pytest

from runtime_adapter.base import OffsetsError
from runtime_adapter.mirrormaker2 import (
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    mirror_cluster_settings,
    offsets_topic,
    spec_clusters,
)

# What MirrorMaker 2 (connect-mirror 4.3.1) wrote in a real run, byte for byte.
MM2_KEY = b'["MirrorSourceConnector",{"cluster":"a","partition":0,"topic":"src-t"}]'
MM2_VALUE = b'{"offset":24}'


def test_keys_and_values_are_byte_for_byte_what_connect_writes():
    assert encode_key("a", "src-t", 0) == MM2_KEY
    assert encode_value(24) == MM2_VALUE
    assert decode_key(MM2_KEY) == ("a", "src-t", 0)
    assert decode_value(MM2_VALUE) == 24


@pytest.mark.parametrize(
    "key",
    [
        None,
        b"",
        b"not json",
        b'["MirrorCheckpointConnector",{"cluster":"a","partition":0,"topic":"t"}]',
        b'["MirrorSourceConnector",{"cluster":"a","topic":"t"}]',
        b'["MirrorSourceConnector",{"cluster":"a","partition":-1,"topic":"t"}]',
        b'["MirrorSourceConnector",{"cluster":"a","partition":true,"topic":"t"}]',
        b'["MirrorSourceConnector",{"cluster":1,"partition":0,"topic":"t"}]',
        b'["MirrorSourceConnector","x"]',
        b'{"MirrorSourceConnector":1}',
    ],
)
def test_other_keys_are_not_mm2_source_offsets(key):
    assert decode_key(key) is None


@pytest.mark.parametrize(
    ("value", "offset"),
    [
        (None, None),  # a tombstone: the offset was reset
        (b"garbage", None),
        (b'{"offset":"3"}', None),
        (b'{"offset":true}', None),
        (b'{"offset":-1}', -1),
        (b'{"offset":7,"topicId":"x"}', 7),
    ],
)
def test_values(value, offset):
    assert decode_value(value) == offset


def test_offsets_topic_name_and_aliases():
    assert offsets_topic("us-east_1") == "mm2-offsets.us-east_1.internal"
    for alias in ("", "a.b", "-a", "a/b", "a" * 65, "a b"):
        with pytest.raises(OffsetsError):
            offsets_topic(alias)


def spec(sink_servers="sink:9092", security=None):
    return {
        "source": {
            "type": "kafka",
            "config": {"bootstrap_servers": "source:9092", "topics": ["t"]},
        },
        "transforms": [],
        "sink": {
            "type": "kafka",
            "config": {
                "bootstrap_servers": sink_servers,
                "topic": "a.t",
                **({"security": security} if security else {}),
            },
        },
    }


def test_only_the_channels_own_clusters_are_reachable_sink_first():
    assert list(spec_clusters(spec())) == ["sink:9092", "source:9092"]
    assert list(spec_clusters(spec(sink_servers="source:9092"))) == ["source:9092"]
    assert mirror_cluster_settings(spec(), "source:9092") == {"security.protocol": "PLAINTEXT"}
    with pytest.raises(OffsetsError, match="not a Kafka cluster the channel"):
        mirror_cluster_settings(spec(), "elsewhere:9092")


def test_the_sinks_security_is_used_and_tls_refused():
    sasl = {
        "protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "username": "u",
        "password": "p",
    }
    settings = mirror_cluster_settings(spec(security=sasl), "sink:9092")
    assert settings["security.protocol"] == "SASL_PLAINTEXT"
    assert settings["sasl.username"] == "u"
    with pytest.raises(OffsetsError, match="TLS"):
        mirror_cluster_settings(spec(security={"protocol": "SSL"}), "sink:9092")
