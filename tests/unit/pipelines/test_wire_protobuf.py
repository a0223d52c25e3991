"""Protobuf in Confluent's wire format in Kafka stages (pipelines/wire.py): Sluice's
protobuf_decode / protobuf_encode on local batch data, schemas (a file importing another
subject's file and a well-known type) read over HTTP from a registry speaking Confluent's REST
API (a real local server), records made and read by protobuf's own Python runtime."""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from google.protobuf import (
    descriptor_pb2,
    descriptor_pool,
    message_factory,
    text_format,
    timestamp_pb2,
)
from pyspark.sql import DataFrame

from pipelines import native, wire
from pipelines.registry_client import REGISTRY_URL_ENV, runtime_registry_token
from pipelines.sinks.kafka import events_to_kafka_records, mark_bad_topics
from pipelines.sources.kafka import kafka_records_to_events
from pipelines.spec.configs import KafkaSinkConfig, KafkaSourceConfig
from pipelines.spec.configs.schema_registry import SchemaRegistryConfig
from tests.support.http_server import Answer, RecordingServer, Request

pytestmark = pytest.mark.spark

COMMON = """
name: "common.proto" package: "shop" syntax: "proto3"
message_type {
  name: "Money"
  field { name: "units" number: 1 type: TYPE_INT64 label: LABEL_OPTIONAL }
  field { name: "currency" number: 2 type: TYPE_STRING label: LABEL_OPTIONAL }
}
"""
ORDERS = """
name: "orders.proto" package: "shop" syntax: "proto3"
dependency: "common.proto" dependency: "google/protobuf/timestamp.proto"
message_type {
  name: "Order"
  field { name: "id" number: 1 type: TYPE_STRING label: LABEL_OPTIONAL }
  field { name: "amount" number: 2 type: TYPE_UINT64 label: LABEL_OPTIONAL }
  field { name: "price" number: 3 type: TYPE_MESSAGE type_name: ".shop.Money"
          label: LABEL_OPTIONAL }
  field { name: "at" number: 4 type: TYPE_MESSAGE type_name: ".google.protobuf.Timestamp"
          label: LABEL_OPTIONAL }
  field { name: "status" number: 5 type: TYPE_ENUM type_name: ".shop.Order.Status"
          label: LABEL_OPTIONAL }
  field { name: "tags" number: 6 type: TYPE_STRING label: LABEL_REPEATED }
  %s
  enum_type { name: "Status" value { name: "NEW" number: 0 } value { name: "PAID" number: 1 } }
}
message_type {
  name: "Refund"
  field { name: "order_id" number: 1 type: TYPE_STRING label: LABEL_OPTIONAL }
  nested_type {
    name: "Reason"
    field { name: "code" number: 1 type: TYPE_SINT32 label: LABEL_OPTIONAL }
  }
}
"""
ADDED = 'field { name: "channel" number: 7 type: TYPE_STRING label: LABEL_OPTIONAL }'


def proto(text: str) -> descriptor_pb2.FileDescriptorProto:
    return text_format.Parse(text, descriptor_pb2.FileDescriptorProto())


def b64(file: descriptor_pb2.FileDescriptorProto) -> str:
    return base64.b64encode(file.SerializeToString()).decode("ascii")


V1, V2 = proto(ORDERS % ""), proto(ORDERS % ADDED)
REFS = [{"name": "common.proto", "subject": "common.proto", "version": 1}]
SUBJECTS: dict[str, list[tuple[int, str, list[dict[str, Any]]]]] = {
    "common.proto": [(30, b64(proto(COMMON)), [])],
    "orders-value": [(31, b64(V1), REFS), (32, b64(V2), REFS)],
    "out-value": [(41, b64(V2), REFS)],
}


def answer(request: Request) -> Answer:
    if request.header("authorization") != f"Bearer {runtime_registry_token()}":
        return Answer(401, json.dumps({"error_code": 40101, "message": "no"}).encode())
    parts = request.path.strip("/").split("/")  # subjects/<s>/versions[/<n>]
    versions = SUBJECTS.get(parts[1], [])
    if not versions:
        return Answer(404, json.dumps({"error_code": 40401, "message": "none"}).encode())
    if len(parts) == 3:
        return Answer(200, json.dumps(list(range(1, len(versions) + 1))).encode())
    schema_id, schema, refs = versions[int(parts[3]) - 1]
    body = {"subject": parts[1], "version": int(parts[3]), "id": schema_id}
    body.update(schemaType="PROTOBUF", schema=schema, references=refs)
    return Answer(200, json.dumps(body).encode())


@pytest.fixture(autouse=True)
def registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordingServer]:
    with RecordingServer(answer) as server:
        monkeypatch.setenv(REGISTRY_URL_ENV, server.url)
        wire._cache.clear()
        yield server


def message_class(file: descriptor_pb2.FileDescriptorProto, name: str) -> Any:
    """A message class built at run time (no protoc here), as generated code is."""
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(proto(COMMON))
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def framed(schema_id: int, message: Any, indexes: bytes = b"\x00") -> bytes:
    return b"\x00" + struct.pack(">I", schema_id) + indexes + message.SerializeToString()


def source() -> KafkaSourceConfig:
    return KafkaSourceConfig(bootstrap_servers="h:1", topics=["orders"], format="protobuf")


def data_of(events: DataFrame) -> list[Any]:
    rows = events.selectExpr("to_json(data) AS d", "failure").orderBy("origin_offset").collect()
    return [json.loads(row.d) if row.failure is None else row.failure.asDict() for row in rows]


def test_writer_schemas_by_id_and_message_indexes(kafka_records: Callable[..., DataFrame]) -> None:
    order_v1, order_v2 = message_class(V1, "shop.Order"), message_class(V2, "shop.Order")
    reason = message_class(V1, "shop.Refund.Reason")
    first = order_v1(id="a", amount=2**64 - 1, tags=["x", "y"])
    first.price.units, first.price.currency = 1500, "EUR"
    first.at.FromJsonString("2024-06-01T08:15:30.120Z")
    second = order_v2(id="b", status=order_v2.PAID, channel="app")
    records = kafka_records(
        [
            ("orders", 0, 0, framed(31, first)),
            ("orders", 0, 1, framed(32, second)),  # a field added mid-stream
            ("orders", 0, 2, framed(32, reason(code=-4), b"\x04\x02\x00")),  # [1, 0]
            ("orders", 0, 3, framed(99, first)),  # an id nobody registered
            ("orders", 0, 4, framed(31, first)[:-2]),  # cut inside its last field
            ("orders", 0, 5, b'{"id": "plain json"}'),  # no magic byte
            ("orders", 0, 6, framed(31, first, b"\x02\x08")),  # [4]: no such message
        ]
    )
    got = data_of(kafka_records_to_events(records, source()))
    read_first, read_second, read_reason, unknown, cut, plain, no_message = got

    assert read_first == {
        "id": "a",
        "amount": 18446744073709551615,  # uint64 above 2^63-1: a decimal
        "price": {"units": 1500, "currency": "EUR"},
        "at": "2024-06-01T08:15:30.120Z",
        "status": "NEW",  # no presence: the default is there
        "tags": ["x", "y"],
    }
    assert read_second == {"id": "b", "amount": 0, "status": "PAID", "tags": [], "channel": "app"}
    assert read_reason == {"code": -4}
    assert unknown["error_class"] == "UnknownSchemaId"
    assert "unknown schema id 99: not a version of subject 'orders-value'" in unknown["message"]
    assert cut["error_class"] == "UndecodableRecord"
    assert "does not decode as Protobuf with schema id 31" in cut["message"]
    assert plain["error_class"] == "InvalidWireFormat"
    assert no_message["error_class"] == "UndecodableRecord"


def test_sink_writes_the_latest_version_with_its_id_and_message(
    kafka_records: Callable[..., DataFrame],
) -> None:
    order_v1 = message_class(V1, "shop.Order")
    first = order_v1(id="a", amount=7, status=order_v1.PAID)
    first.price.units = 3
    records = kafka_records(
        [("orders", 0, 0, framed(31, first)), ("orders", 0, 1, b'{"id": ["not", "a", "string"]}')]
    )
    events = kafka_records_to_events(records, source()).filter("origin_offset = 0")
    plain = kafka_records_to_events(
        records, KafkaSourceConfig(bootstrap_servers="h:1", topics=["orders"])
    ).filter("origin_offset = 1")
    sink = KafkaSinkConfig(bootstrap_servers="h:1", topic="out", format="protobuf")

    assert mark_bad_topics(events, sink).filter("failure IS NOT NULL").count() == 0
    value = events_to_kafka_records(events, sink).collect()[0].value
    assert value[:6] == b"\x00" + struct.pack(">I", 41) + b"\x00"
    order = message_class(V2, "shop.Order").FromString(bytes(value[6:]))
    assert (order.id, order.amount, order.status, order.price.units) == ("a", 7, 1, 3)

    failure = mark_bad_topics(plain, sink).collect()[0].failure
    assert failure.error_class == "DataDoesNotFitSchema"
    assert "schema id 41" in failure.message

    nested = KafkaSinkConfig(
        bootstrap_servers="h:1",
        topic="out",
        format="protobuf",
        schema_registry=SchemaRegistryConfig(message="shop.Refund.Reason"),
    )
    reason = kafka_records([("orders", 0, 0, b'{"code": -9}')])  # plain JSON in, Protobuf out
    reason_events = kafka_records_to_events(
        reason, KafkaSourceConfig(bootstrap_servers="h:1", topics=["orders"])
    )
    value = events_to_kafka_records(reason_events, nested).collect()[0].value
    assert value[:8] == b"\x00" + struct.pack(">I", 41) + b"\x04\x02\x00"
    assert message_class(V2, "shop.Refund.Reason").FromString(bytes(value[8:])).code == -9


def test_a_message_the_schema_does_not_have_fails_the_build(
    kafka_records: Callable[..., DataFrame],
) -> None:
    events = kafka_records_to_events(
        kafka_records([("orders", 0, 0, b"{}")]),
        KafkaSourceConfig(bootstrap_servers="h:1", topics=["orders"]),
    )
    sink = KafkaSinkConfig(
        bootstrap_servers="h:1",
        topic="out",
        format="protobuf",
        schema_registry=SchemaRegistryConfig(message="shop.Nope"),
    )
    with pytest.raises(ValueError, match=r"has no message 'shop\.Nope'"):
        mark_bad_topics(events, sink)


def test_without_sluices_functions_protobuf_is_refused(
    kafka_records: Callable[..., DataFrame], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(native.DISABLE_ENV, "false")
    with pytest.raises(wire.ProtobufUnavailable, match="needs Sluice's Spark functions"):
        kafka_records_to_events(kafka_records([("orders", 0, 0, b"\x00")]), source())
