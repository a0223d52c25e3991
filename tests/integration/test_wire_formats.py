"""Avro and Protobuf in Confluent's wire format through real channels, against Sluice's own
registry.

confluent-kafka's ``AvroSerializer`` (auto-registering in Sluice's registry, HTTP basic as a
console user) writes orders to the source topic: five with version 1 of the subject, then
five with version 2 (a field added with a default) mid-stream, and one record naming a schema
id the registry does not know. The channel (Kafka avro → filter → Kafka avro, tolerance all)
reads each record with its writer schema into the latest version, filters, and writes Avro
with the sink subject's id, which ``AvroDeserializer`` reads back: no event of either version
lost, the default filled in, the unknown id in the dead-letter topic with the reason. The Avro
channel is team ``wire``'s: its producer registers in the team's own registry URL
(``/schema-registry/teams/wire``) logged in as the team's service account (basic auth with its
token), and the driver resolves the subjects there, not in the ``default`` team's registry,
which holds a decoy of the sink's subject.

The Protobuf channel does the same with confluent-kafka's ``ProtobufSerializer`` (message
classes built from descriptors at run time: there is no protoc here) and reads what the sink
writes back with its ``ProtobufDeserializer``.
"""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2

from tests.integration.conftest import Stack, manage
from tests.integration.test_walking_skeleton import consume_all, make_topic, produce, wait_for_state

pytestmark = pytest.mark.integration

V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [{"name": "seq", "type": "long"}, {"name": "amount", "type": "double"}],
}
V2 = {**V1, "fields": [*V1["fields"], {"name": "currency", "type": "string", "default": "EUR"}]}
V3 = {**V2, "fields": [*V2["fields"], {"name": "channel", "type": "string", "default": "web"}]}


def test_avro_channel_reads_evolving_writers_and_writes_avro(stack: Stack) -> None:
    source, sink, dlq, name = "wire-in", "wire-out", "wire-dead", "wire-avro"
    for topic in (source, sink, dlq):
        make_topic(stack.kafka, topic, 1)
    http = stack.session()
    manage(stack.env, "sluice_role", "admin", "viewer", "--team", "wire", "--create-team")
    account = http.post(
        f"{stack.api}/teams/wire/service-accounts/",
        json={"name": "ci", "role": "editor"},
        timeout=10,
    )
    assert account.status_code == 201, account.text
    registry = SchemaRegistryClient(
        {
            "url": f"{stack.base_url}/schema-registry/teams/wire",
            "basic.auth.user.info": f"svc.wire.ci:{account.json()['token']}",
        }
    )
    # The default team's registry has a subject of the sink's name: not the channel's.
    decoy = SchemaRegistryClient(
        {
            "url": f"{stack.base_url}/schema-registry",
            "basic.auth.user.info": "admin:integration-secret",
        }
    )
    decoy_id = decoy.register_schema(f"{sink}-value", Schema(json.dumps(V3), "AVRO"))
    values: list[bytes] = []
    for version, schema, seqs in ((1, V1, range(5)), (2, V2, range(5, 10))):
        serialize = AvroSerializer(registry, json.dumps(schema))
        ctx = SerializationContext(source, MessageField.VALUE)
        for seq in seqs:
            order = {"seq": seq, "amount": float(seq * 10)}
            if version == 2:
                order["currency"] = "USD"
            values.append(serialize(order, ctx))
    values.append(b"\x00" + struct.pack(">I", 987654) + b"\x02")  # an id nobody registered
    produce(stack.kafka, source, values)
    assert len(registry.get_versions(f"{source}-value")) == 2
    out_id = registry.register_schema(f"{sink}-value", Schema(json.dumps(V2), "AVRO"))
    assert out_id != decoy_id
    assert f"{source}-value" not in decoy.get_subjects()  # the team's, not default's

    spec = {
        "source": {
            "type": "kafka",
            "config": {
                "bootstrap_servers": stack.kafka,
                "topics": [source],
                "starting_offsets": "earliest",
                "format": "avro",
            },
        },
        "transforms": [
            {"type": "filter", "config": {"pattern": {"data": {"seq": [{"numeric": [">=", 1]}]}}}}
        ],
        "sink": {
            "type": "kafka",
            "config": {"bootstrap_servers": stack.kafka, "topic": sink, "format": "avro"},
        },
        "errors": {
            "tolerance": "all",
            "dead_letter": {
                "type": "kafka",
                "config": {"bootstrap_servers": stack.kafka, "topic": dlq, "format": "cloudevents"},
            },
        },
    }
    bad = http.post(
        f"{stack.api}/channels/",
        json={
            "name": "wire-bad",
            "spec": {
                **spec,
                "source": {
                    **spec["source"],
                    "config": {**spec["source"]["config"], "topics": [source, sink]},
                },
            },
        },
        timeout=10,
    )
    assert bad.status_code == 400, bad.text
    errors = bad.json()
    assert "subject: name the subject" in errors["spec.source.config.schema_registry"][0]
    created = http.post(
        f"{stack.api}/channels/",
        json={"name": name, "spec": spec, "target_state": "RUNNING", "team": "wire"},
        timeout=10,
    )
    assert created.status_code == 201, created.text
    wait_for_state(stack, name, "RUNNING", 180)

    deserialize = AvroDeserializer(registry)
    ctx = SerializationContext(sink, MessageField.VALUE)
    written = consume_all(stack.kafka, sink, 9, timeout=180)
    assert {value[1:5] for value in written} == {struct.pack(">I", out_id)}
    orders = sorted((deserialize(value, ctx) for value in written), key=lambda o: o["seq"])
    assert [o["seq"] for o in orders] == list(range(1, 10))  # seq 0 filtered out, none lost
    assert [o["currency"] for o in orders] == ["EUR"] * 4 + ["USD"] * 5  # v1: the default
    assert all(o["amount"] == o["seq"] * 10 for o in orders)

    letters = [json.loads(v) for v in consume_all(stack.kafka, dlq, 1, timeout=60)]
    assert len(letters) == 1
    letter = letters[0]["data"]
    assert letter["error_class"] == "UnknownSchemaId"
    assert "unknown schema id 987654" in letter["message"]
    assert letter["origin"]["offset"] == 10

    # A third version registered while the channel runs: its records fail their batch before
    # anything is written, the restart policy builds the query again, and they arrive.
    serialize = AvroSerializer(registry, json.dumps(V3))
    ctx_in = SerializationContext(source, MessageField.VALUE)
    later = [{"seq": s, "amount": s * 10.0, "currency": "GBP", "channel": "app"} for s in (10, 11)]
    produce(stack.kafka, source, [serialize(order, ctx_in) for order in later])
    written = consume_all(stack.kafka, sink, 11, timeout=240)
    orders = sorted((deserialize(value, ctx) for value in written), key=lambda o: o["seq"])
    assert [o["seq"] for o in orders][-2:] == [10, 11]
    assert [o["currency"] for o in orders][-2:] == ["GBP", "GBP"]
    assert len(consume_all(stack.kafka, dlq, 1, timeout=5)) == 1, "no new dead letter"
    wait_for_state(stack, name, "RUNNING", 60)

    assert http.post(f"{stack.api}/channels/{name}/stop", timeout=10).status_code == 202
    wait_for_state(stack, name, "STOPPED", 60)


def order_class(with_channel: bool) -> Any:
    """shop.pb.Order (version 2 adds ``channel``), built at run time in a pool of its own."""
    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="wire_order.proto", package="shop.pb", syntax="proto3"
    )
    proto.dependency.append("google/protobuf/timestamp.proto")
    order = proto.message_type.add(name="Order")
    status = order.enum_type.add(name="Status")
    status.value.add(name="NEW", number=0)
    status.value.add(name="PAID", number=1)
    optional = field.LABEL_OPTIONAL
    order.field.add(name="seq", number=1, type=field.TYPE_INT64, label=optional)
    order.field.add(name="amount", number=2, type=field.TYPE_DOUBLE, label=optional)
    order.field.add(
        name="status", number=3, type=field.TYPE_ENUM, type_name=".shop.pb.Order.Status",
        label=optional,
    )  # fmt: skip
    order.field.add(
        name="at", number=4, type=field.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp",
        label=optional,
    )  # fmt: skip
    order.field.add(name="tags", number=5, type=field.TYPE_STRING, label=field.LABEL_REPEATED)
    if with_channel:
        order.field.add(name="channel", number=6, type=field.TYPE_STRING, label=optional)
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.pb.Order"))


def test_protobuf_channel_reads_evolving_writers_and_writes_protobuf(stack: Stack) -> None:
    source, sink, dlq, name = "wire-pb-in", "wire-pb-out", "wire-pb-dead", "wire-protobuf"
    for topic in (source, sink, dlq):
        make_topic(stack.kafka, topic, 1)
    registry = SchemaRegistryClient(
        {
            "url": f"{stack.base_url}/schema-registry",
            "basic.auth.user.info": "admin:integration-secret",
        }
    )
    v1, v2 = order_class(False), order_class(True)
    conf = {"auto.register.schemas": True, "use.deprecated.format": False}
    ctx = SerializationContext(source, MessageField.VALUE)
    values: list[bytes] = []
    for cls, seqs in ((v1, range(5)), (v2, range(5, 10))):
        serialize = ProtobufSerializer(cls, registry, conf=conf)
        for seq in seqs:
            order = cls(seq=seq, amount=seq * 10.0, status=seq % 2, tags=[f"t{seq}"])
            order.at.FromSeconds(1_700_000_000 + seq)
            if cls is v2:
                order.channel = "app"  # a field added mid-stream
            values.append(serialize(order, ctx))
    values.append(b"\x00" + struct.pack(">I", 987655) + b"\x00\x08\x01")  # nobody's id
    produce(stack.kafka, source, values)
    assert len(registry.get_versions(f"{source}-value")) == 2
    out_schema = base64.b64encode(v2.DESCRIPTOR.file.serialized_pb).decode()
    out_id = registry.register_schema(f"{sink}-value", Schema(out_schema, "PROTOBUF"))

    kafka = {"bootstrap_servers": stack.kafka, "format": "protobuf"}
    spec = {
        "source": {
            "type": "kafka",
            "config": {**kafka, "topics": [source], "starting_offsets": "earliest"},
        },
        "transforms": [
            {"type": "filter", "config": {"pattern": {"data": {"seq": [{"numeric": [">=", 1]}]}}}}
        ],
        "sink": {"type": "kafka", "config": {**kafka, "topic": sink}},
        "errors": {
            "tolerance": "all",
            "dead_letter": {
                "type": "kafka",
                "config": {"bootstrap_servers": stack.kafka, "topic": dlq, "format": "cloudevents"},
            },
        },
    }
    http = stack.session()
    bad_sink = {**spec["sink"]["config"], "schema_registry": {"message": "shop..Order"}}
    bad = http.post(
        f"{stack.api}/channels/",
        json={
            "name": "wire-pb-bad",
            "spec": {**spec, "sink": {"type": "kafka", "config": bad_sink}},
        },
        timeout=10,
    )
    assert bad.status_code == 400, bad.text
    assert "spec.sink.config.schema_registry.message" in bad.json()
    created = http.post(
        f"{stack.api}/channels/",
        json={"name": name, "spec": spec, "target_state": "RUNNING"},
        timeout=10,
    )
    assert created.status_code == 201, created.text
    wait_for_state(stack, name, "RUNNING", 180)

    deserialize = ProtobufDeserializer(
        v2, conf={"use.deprecated.format": False}, schema_registry_client=registry
    )
    out_ctx = SerializationContext(sink, MessageField.VALUE)
    written = consume_all(stack.kafka, sink, 9, timeout=180)
    assert {value[1:5] for value in written} == {struct.pack(">I", out_id)}
    orders = sorted((deserialize(value, out_ctx) for value in written), key=lambda o: o.seq)
    assert [o.seq for o in orders] == list(range(1, 10))  # seq 0 filtered out, none lost
    assert [o.channel for o in orders] == [""] * 4 + ["app"] * 5  # v1 records: no channel
    assert all(o.amount == o.seq * 10 and o.status == o.seq % 2 for o in orders)
    assert all(o.at.seconds == 1_700_000_000 + o.seq and o.tags == [f"t{o.seq}"] for o in orders)

    letters = [json.loads(v) for v in consume_all(stack.kafka, dlq, 1, timeout=60)]
    assert len(letters) == 1
    assert letters[0]["data"]["error_class"] == "UnknownSchemaId"
    assert "unknown schema id 987655" in letters[0]["data"]["message"]

    assert http.post(f"{stack.api}/channels/{name}/stop", timeout=10).status_code == 202
    wait_for_state(stack, name, "STOPPED", 60)
