"""Reading dead letters back: ids, every stored shape the targets write, the files sink's
commit log, parquet rows."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from runtime_adapter import dead_letters as store
from runtime_adapter.dead_letters import BadDeadLetterId, KafkaRecord

CONTEXT = {
    "stage": "transforms[0] (cast)",
    "error_class": "CastError",
    "message": "data.amount: cannot cast 'n/a' to long",
    "origin": {
        "topic": "orders",
        "partition": 2,
        "offset": 41,
        "timestamp": "2026-11-26T10:00:00Z",
    },
    "payload": '{"seq": 41, "amount": "n/a"}',
    "event": {"id": "orders/2/41", "data": {"seq": 41, "amount": "n/a"}},
}
ENVELOPE = {
    "id": "orders/2/41",
    "source": "sluice://channels/shop",
    "specversion": "1.0",
    "type": "sluice.deadletter",
    "time": "2026-11-26T10:00:05Z",
    "data": CONTEXT,
}


def test_kafka_ids_round_trip_and_refuse_anything_else():
    letter_id = store.kafka_id("dl.dead_letters-1", 3, 1234567)

    assert letter_id == "kafka:dl.dead_letters-1:3:1234567"
    assert store.parse_kafka_id(letter_id) == ("dl.dead_letters-1", 3, 1234567)
    for bad in ("kafka:a b:0:1", "kafka:t:-1:2", "kafka:t:0", "files:x:1", "kafka:t:0:1:2", ""):
        with pytest.raises(BadDeadLetterId):
            store.parse_kafka_id(bad)


def test_files_ids_round_trip_and_never_name_another_directory():
    name = "part-00000-1f0c8e2a-3b4c-4d5e-8f90-123456789abc-c000.txt"

    assert store.parse_files_id(store.files_id(name, 7)) == (name, 7)
    for bad in ("files:../x:1", "files:a/b:1", "files:.hidden:0", "files:x:-1", "files::1"):
        with pytest.raises(BadDeadLetterId):
            store.parse_files_id(bad)


def record(value: object, headers: dict[str, bytes] | None = None) -> KafkaRecord:
    return KafkaRecord("dl", 0, 9, 1_790_000_000_000, json.dumps(value).encode(), headers or {})


def test_a_structured_cloudevent_gives_the_whole_dead_letter():
    letter = store.kafka_letter(record(ENVELOPE))

    assert letter is not None
    assert letter.id == "kafka:dl:0:9"
    assert letter.time == datetime(2026, 11, 26, 10, 0, 5, tzinfo=UTC)
    assert (letter.stage, letter.error_class) == ("transforms[0] (cast)", "CastError")
    assert (letter.origin_topic, letter.origin_partition, letter.origin_offset) == ("orders", 2, 41)
    assert letter.payload == '{"seq": 41, "amount": "n/a"}'
    assert letter.event_id == "orders/2/41"
    assert letter.location == {"kind": "kafka", "topic": "dl", "partition": 0, "offset": 9}


def test_a_json_record_holds_only_the_context_and_takes_the_records_time():
    letter = store.kafka_letter(record(CONTEXT))

    assert letter is not None
    assert letter.time == datetime.fromtimestamp(1_790_000_000, UTC)
    assert letter.message == CONTEXT["message"]


def test_a_binary_cloudevent_takes_its_time_and_id_from_the_headers():
    unparsed = {**CONTEXT, "stage": "source", "error_class": "InvalidJson", "event": None}
    headers = {"ce_id": b"orders/2/41", "ce_time": b"2026-11-26T10:00:07Z"}

    letter = store.kafka_letter(record(unparsed, headers))

    assert letter is not None
    assert letter.time == datetime(2026, 11, 26, 10, 0, 7, tzinfo=UTC)
    assert letter.event is None and letter.event_id is None  # never became an event


def test_a_bus_dead_letter_names_its_rule_and_target():
    bus = {**ENVELOPE, "data": {**CONTEXT, "rule": "big", "target": "rules[1].sinks[0]"}}

    letter = store.kafka_letter(record(bus))

    assert letter is not None and (letter.rule, letter.target) == ("big", "rules[1].sinks[0]")


@pytest.mark.parametrize("value", [b"not json", b'{"seq": 1}', b"[1, 2]"])
def test_a_record_that_is_no_dead_letter_is_skipped(value):
    assert store.kafka_letter(KafkaRecord("dl", 0, 1, None, value, {})) is None


def write_committed(directory: Path, batches: dict[int, list[str]], log: bool = True) -> None:
    """Files as Spark's file sink leaves them: data files, and a ``_spark_metadata`` entry
    per batch listing the files it committed."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "_spark_metadata").mkdir(exist_ok=True)
    for batch, names in batches.items():
        entries = [
            json.dumps({"path": f"file://{directory / name}", "size": 1, "action": "add"})
            for name in names
        ]
        if log:
            (directory / "_spark_metadata" / str(batch)).write_text("v1\n" + "\n".join(entries))


def test_only_committed_files_count_newest_batch_first(tmp_path):
    for name, seq in (("part-a.txt", 1), ("part-b.txt", 2), ("part-leftover.txt", 3)):
        lines = [
            json.dumps({**ENVELOPE, "data": {**CONTEXT, "message": f"m{seq}-{row}"}})
            for row in range(2)
        ]
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    write_committed(tmp_path, {0: ["part-a.txt"], 1: ["part-b.txt"]})

    letters = store.files_letters(tmp_path, "jsonl", limit=100)

    assert [d.message for d in letters] == ["m2-1", "m2-0", "m1-1", "m1-0"]
    assert letters[0].id == "files:part-b.txt:1"
    assert store.files_letter(tmp_path, "jsonl", "part-a.txt", 0).message == "m1-0"
    assert store.files_letter(tmp_path, "jsonl", "part-leftover.txt", 0) is None  # uncommitted
    assert store.files_letter(tmp_path, "jsonl", "part-a.txt", 2) is None
    assert len(store.files_letters(tmp_path, "jsonl", limit=3)) == 3


def test_parquet_rows_of_either_content_are_read(tmp_path):
    envelope_rows = {
        "id": ["x/0/1"],
        "source": ["sluice://channels/shop"],
        "specversion": ["1.0"],
        "type": ["sluice.deadletter"],
        "subject": ["source"],
        "time": [datetime(2026, 11, 26, 9, 0, tzinfo=UTC)],
        "datacontenttype": ["application/json"],
        "dataschema": [None],
        "extensions": ['{"sluicestage":"source"}'],
        "data": [json.dumps(CONTEXT)],
    }
    pq.write_table(pa.table(envelope_rows), tmp_path / "part-1.parquet")
    pq.write_table(pa.table({"data": [json.dumps(CONTEXT)]}), tmp_path / "part-2.parquet")
    write_committed(tmp_path, {0: ["part-1.parquet"], 1: ["part-2.parquet"]})

    data_only, enveloped = store.files_letters(tmp_path, "parquet", limit=10)

    assert enveloped.time == datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
    assert enveloped.error_class == data_only.error_class == "CastError"
    assert data_only.id == "files:part-2.parquet:0"


def test_jdbc_ids_round_trip_any_event_id():
    for row_id in ("orders/2/41", "a:b c", "ü"):
        assert store.parse_jdbc_id(store.jdbc_id(row_id)) == row_id
    for bad in ("jdbc:", "jdbc:a/b", "kafka:t:0:1", "jdbc:%%"):
        with pytest.raises(BadDeadLetterId):
            store.parse_jdbc_id(bad)


def written_by_the_jdbc_sink(config) -> None:
    """Three dead letters upserted by the JDBC sink's own writer (rows as events_to_rows
    makes them), one batch after the other."""
    from pipelines.sinks.jdbc import upsert_rows

    for seq in range(3):
        context = {**CONTEXT, "message": f"m{seq}"}
        data = {**ENVELOPE, "id": f"orders/2/{seq}", "data": context}
        document = data if config.content == "cloudevents" else context
        row = (
            f"orders/2/{seq}",
            ENVELOPE["source"],
            ENVELOPE["type"],
            ENVELOPE["time"],
            "transforms[0] (cast)",
            json.dumps(document),
        )
        upsert_rows(config, [row])


@pytest.mark.parametrize("content", ["cloudevents", "data"])
def test_a_sqlite_table_is_read_newest_first(tmp_path, content):
    from pipelines.spec.configs.jdbc import JdbcSinkConfig

    config = JdbcSinkConfig(url=f"sqlite:///{tmp_path}/dl.db", table="dead", content=content)
    assert store.jdbc_letters(config, limit=10) == []  # no table yet
    written_by_the_jdbc_sink(config)

    letters = store.jdbc_letters(config, limit=10)

    assert [d.message for d in letters] == ["m2", "m1", "m0"]
    assert letters[0].id == store.jdbc_id("orders/2/2")
    assert letters[0].payload == CONTEXT["payload"]
    one = store.jdbc_letters(config, limit=1, row_id="orders/2/1")
    assert [d.message for d in one] == ["m1"]
    assert len(store.jdbc_letters(config, limit=2)) == 2


def test_a_postgresql_table_is_read_through_the_address_guard(postgres_url, monkeypatch):
    from pipelines.spec.configs.jdbc import JdbcSinkConfig

    monkeypatch.setenv("SLUICE_JDBC_SINK_ALLOW", "127.0.0.1")
    config = JdbcSinkConfig(url=postgres_url, table=f"dead_{os.getpid()}")
    assert store.jdbc_letters(config, limit=10) == []
    written_by_the_jdbc_sink(config)

    letters = store.jdbc_letters(config, limit=10)

    assert [d.message for d in letters] == ["m2", "m1", "m0"]
    assert letters[1].origin_offset == 41 and letters[1].time is not None
    monkeypatch.delenv("SLUICE_JDBC_SINK_ALLOW")
    with pytest.raises(ValueError, match="SLUICE_JDBC_SINK_ALLOW"):  # the guard refuses
        store.jdbc_letters(config, limit=10)
