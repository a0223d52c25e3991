"""Confluent wire formats in Kafka stages (pipelines/wire.py): Spark's from_avro / to_avro on
local batch data, schemas read over HTTP from a registry speaking Confluent's REST API (a real
local server answering /subjects/... as Confluent does)."""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Callable, Iterator
from typing import Any

import fastavro
import pytest
from pyspark.sql import DataFrame

from pipelines import wire
from pipelines.registry_client import REGISTRY_URL_ENV, runtime_registry_token
from pipelines.sinks.kafka import events_to_kafka_records, mark_bad_topics
from pipelines.sources.kafka import kafka_records_to_events
from pipelines.spec.configs import KafkaSinkConfig, KafkaSourceConfig
from tests.support.http_server import Answer, RecordingServer, Request

pytestmark = pytest.mark.spark

V1 = {
    "type": "record",
    "name": "Order",
    "fields": [{"name": "id", "type": "string"}, {"name": "amount", "type": "double"}],
}
V2 = {
    **V1,
    "fields": [*V1["fields"], {"name": "currency", "type": "string", "default": "EUR"}],
}
SUBJECTS = {"orders-value": [(11, V1), (12, V2)], "out-value": [(21, V2)]}


def answer(request: Request) -> Answer:
    if request.header("authorization") != f"Bearer {runtime_registry_token()}":
        return Answer(401, json.dumps({"error_code": 40101, "message": "no"}).encode())
    parts = request.path.strip("/").split("/")  # subjects/<s>/versions[/<n>]
    versions = SUBJECTS.get(parts[1], [])
    if len(parts) == 3:
        return Answer(200, json.dumps(list(range(1, len(versions) + 1))).encode())
    schema_id, schema = versions[int(parts[3]) - 1]
    body = {"subject": parts[1], "version": int(parts[3]), "id": schema_id}
    if schema.get("type") == "object":
        body["schemaType"] = "JSON"
    return Answer(200, json.dumps({**body, "schema": json.dumps(schema)}).encode())


@pytest.fixture(autouse=True)
def registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordingServer]:
    with RecordingServer(answer) as server:
        monkeypatch.setenv(REGISTRY_URL_ENV, server.url)
        wire._cache.clear()
        yield server


def framed(schema_id: int, schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return b"\x00" + struct.pack(">I", schema_id) + out.getvalue()


def source(format_: str = "avro") -> KafkaSourceConfig:
    return KafkaSourceConfig(bootstrap_servers="h:1", topics=["orders"], format=format_)


def data_of(events: DataFrame) -> list[Any]:
    rows = events.selectExpr("to_json(data) AS d", "failure").orderBy("id").collect()
    return [json.loads(row.d) if row.failure is None else row.failure.asDict() for row in rows]


def test_avro_writer_schemas_by_id_resolve_into_the_latest(
    kafka_records: Callable[..., DataFrame],
) -> None:
    records = kafka_records(
        [
            ("orders", 0, 0, framed(11, V1, {"id": "a", "amount": 1.5})),  # before the field
            ("orders", 0, 1, framed(12, V2, {"id": "b", "amount": 2.0, "currency": "USD"})),
            ("orders", 0, 2, framed(99, V1, {"id": "c", "amount": 3.0})),  # unknown id
            ("orders", 0, 3, b"\x00\x00\x00\x00\x0b\xff"),  # id 11, truncated payload
            ("orders", 0, 4, b'{"id": "plain json"}'),  # no magic byte
        ]
    )
    first, second, unknown, broken, plain = data_of(kafka_records_to_events(records, source()))

    assert first == {"id": "a", "amount": 1.5, "currency": "EUR"}  # the default filled in
    assert second == {"id": "b", "amount": 2.0, "currency": "USD"}
    assert unknown["error_class"] == "UnknownSchemaId"
    assert "unknown schema id 99: not a version of subject 'orders-value'" in unknown["message"]
    assert "topic=orders partition=0 offset=2" in unknown["message"]
    assert broken["error_class"] == "UndecodableRecord"
    assert "does not decode as Avro with schema id 11" in broken["message"]
    assert plain["error_class"] == "InvalidWireFormat"


def test_avro_sink_writes_the_latest_version_behind_its_id(
    kafka_records: Callable[..., DataFrame],
) -> None:
    records = kafka_records([("orders", 0, 0, framed(11, V1, {"id": "a", "amount": 1.5}))])
    events = kafka_records_to_events(records, source())
    sink = KafkaSinkConfig(bootstrap_servers="h:1", topic="out", format="avro")

    checked = mark_bad_topics(events, sink)
    assert checked.filter("failure IS NOT NULL").count() == 0
    value = events_to_kafka_records(events, sink).collect()[0].value

    assert value[:5] == b"\x00" + struct.pack(">I", 21)
    decoded = fastavro.schemaless_reader(io.BytesIO(value[5:]), fastavro.parse_schema(V2))
    assert decoded == {"id": "a", "amount": 1.5, "currency": "EUR"}


def test_data_that_does_not_fit_the_schema_fails_before_the_sink(
    kafka_records: Callable[..., DataFrame],
) -> None:
    records = kafka_records([("orders", 0, 0, b'{"id": "x"}')])  # no amount
    events = kafka_records_to_events(
        records, KafkaSourceConfig(bootstrap_servers="h:1", topics=["orders"])
    )
    sink = KafkaSinkConfig(bootstrap_servers="h:1", topic="out", format="avro")

    failure = mark_bad_topics(events, sink).collect()[0].failure
    assert failure.error_class == "DataDoesNotFitSchema"
    assert "schema id 21" in failure.message


def test_json_schema_payloads(kafka_records: Callable[..., DataFrame]) -> None:
    SUBJECTS["orders-value"] = [(31, {"type": "object"})]
    try:
        records = kafka_records(
            [
                ("orders", 0, 0, b"\x00\x00\x00\x00\x1f" + b'{"id": "j"}'),
                ("orders", 0, 1, b"\x00\x00\x00\x00\x1f" + b"{not json"),
            ]
        )
        good, bad = data_of(kafka_records_to_events(records, source("json-schema")))
    finally:
        SUBJECTS["orders-value"] = [(11, V1), (12, V2)]
    assert good == {"id": "j"}
    assert bad["error_class"] == "UndecodableRecord"
