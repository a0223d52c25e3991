"""Reading a channel's dead letters back from where its dead-letter target wrote them.

A dead letter (``pipelines.errors.DEAD_LETTER_SCHEMA``) leaves the driver as a CloudEvent of
type ``sluice.deadletter`` whose ``data`` holds its context (``stage``, ``error_class``,
``message``, a bus's ``rule`` and ``target``, ``origin`` {topic, partition, offset,
timestamp}, ``payload``: the record as read, ``event``: the event the stage received). The
target writes that event in its own format; each reader here turns what it finds back into
:class:`DeadLetter`:

* Kafka - the tail of the topic, read by assigning partitions (no consumer group joins or
  commits, so reading moves nobody's offsets), at most ``limit`` records per partition,
  bounded in time. ``format: cloudevents`` records carry the whole event, ``json`` and
  ``cloudevents-binary`` ones its ``data`` (the binary mode's ``ce_id`` / ``ce_time``
  headers give the rest). Id: ``kafka:<topic>:<partition>:<offset>``.
* JDBC - the sink's table (SQLite or PostgreSQL, reached as the sink reaches it), newest
  ``written_at`` first. Id: ``jdbc:<the row's id in base64url>``.
* Files - the files sink's directory (already checked under the files roots by the caller):
  only files its ``_spark_metadata`` log lists as committed (what Spark's readers see),
  newest batch first, ``jsonl`` lines or ``parquet`` rows, at most ``limit`` dead letters.
  Id: ``files:<file name>:<row>``.

Nothing here starts Spark; everything is bounded by ``limit`` and a timeout.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from pipelines.net import JDBC_SINK, allow_list, vetted_ips
from pipelines.spec.configs.jdbc import JdbcSinkConfig, postgresql_target, sqlite_file
from runtime_adapter.base import RuntimeUnavailable
from runtime_adapter.kafka import (
    BrokerUnreachable,
    TopicReplication,
    consumer,
    create_topic,
    producer,
    watermarks,
)

KAFKA_ID = re.compile(
    r"^kafka:(?P<topic>[A-Za-z0-9._-]{1,249}):(?P<partition>\d{1,6}):(?P<offset>\d{1,19})$"
)
FILES_ID = re.compile(r"^files:(?P<file>[A-Za-z0-9._=-]{1,255}):(?P<row>\d{1,9})$")
READER_GROUP = "sluice-dead-letter-reader"
"""librdkafka needs a ``group.id`` even for assigned partitions; the reader never joins or
commits, so this group stays empty."""


class BadDeadLetterId(ValueError):
    """An id that names no dead letter of any readable kind."""


@dataclass(frozen=True)
class DeadLetter:
    """One dead letter as read back (see the module docstring)."""

    id: str
    time: datetime | None
    """When it became a dead letter (the event's ``time``, else the record's timestamp)."""
    stage: str
    error_class: str
    message: str
    event_id: str | None = None
    rule: str | None = None
    target: str | None = None
    origin_topic: str | None = None
    origin_partition: int | None = None
    origin_offset: int | None = None
    origin_timestamp: str | None = None
    payload: str | None = None
    """The original record as the source read it (UTF-8 text), what a redrive writes."""
    event: Any = None
    """The event the failing stage received (JSON), ``None`` for a record never parsed."""
    location: dict[str, Any] = field(default_factory=dict)
    """Where it is stored: ``{"kind": "kafka", "topic", "partition", "offset"}`` or
    ``{"kind": "files", "file", "row"}``."""


def letter_from_json(
    document: Any,
    *,
    id: str,
    when: datetime | None,
    location: dict[str, Any],
    ce_id: str | None = None,
) -> DeadLetter | None:
    """A :class:`DeadLetter` from a stored document: a structured CloudEvent
    (``specversion``, ``data``) or its ``data`` alone; ``None`` when it is neither."""
    if not isinstance(document, dict):
        return None
    context = document
    if "specversion" in document and isinstance(document.get("data"), dict):
        context = document["data"]
        ce_id = ce_id or _text(document.get("id"))
        when = parse_time(document.get("time")) or when
    if "error_class" not in context and "stage" not in context:
        return None
    found_origin = context.get("origin")
    origin: dict[str, Any] = found_origin if isinstance(found_origin, dict) else {}
    event = context.get("event")
    event_id = _text(event.get("id")) if isinstance(event, dict) else None
    return DeadLetter(
        id=id,
        time=when,
        stage=_text(context.get("stage")) or "",
        error_class=_text(context.get("error_class")) or "",
        message=_text(context.get("message")) or "",
        event_id=event_id or (ce_id if event is not None else None),
        rule=_text(context.get("rule")),
        target=_text(context.get("target")),
        origin_topic=_text(origin.get("topic")),
        origin_partition=_int(origin.get("partition")),
        origin_offset=_int(origin.get("offset")),
        origin_timestamp=_text(origin.get("timestamp")),
        payload=_text(context.get("payload")),
        event=event,
        location=location,
    )


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 text as an aware datetime; ``None`` when it is not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# -- Kafka ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KafkaRecord:
    topic: str
    partition: int
    offset: int
    timestamp_ms: int | None
    value: bytes | None
    headers: dict[str, bytes]


def kafka_id(topic: str, partition: int, offset: int) -> str:
    return f"kafka:{topic}:{partition}:{offset}"


def parse_kafka_id(letter_id: str) -> tuple[str, int, int]:
    """``(topic, partition, offset)`` of a Kafka dead letter's id; :class:`BadDeadLetterId`."""
    found = KAFKA_ID.match(letter_id)
    if found is None:
        raise BadDeadLetterId(f"{letter_id!r} is not a Kafka dead letter's id")
    return found["topic"], int(found["partition"]), int(found["offset"])


def _reader(bootstrap_servers: str, settings: Mapping[str, object] | None) -> Consumer:
    return consumer(
        bootstrap_servers,
        READER_GROUP,
        settings,
        {
            "enable.auto.offset.store": False,
            "auto.offset.reset": "latest",
            "enable.partition.eof": True,
        },
    )


def read_kafka_tail(
    bootstrap_servers: str,
    topic: str,
    *,
    limit: int,
    settings: Mapping[str, object] | None = None,
    timeout: float = 10.0,
) -> list[KafkaRecord]:
    """The newest ``limit`` records of each partition of ``topic`` (none when it does not
    exist). Raises :class:`BrokerUnreachable` when the brokers do not answer."""
    consumer = _reader(bootstrap_servers, settings)
    try:
        try:
            metadata = consumer.list_topics(topic, timeout=timeout)
        except KafkaException as exc:
            raise BrokerUnreachable(f"Kafka broker(s) {bootstrap_servers}: {exc}") from exc
        meta = metadata.topics.get(topic)
        if meta is None or meta.error is not None:
            return []
        ranges: dict[int, tuple[int, int]] = {}
        for partition in sorted(meta.partitions):
            low, high = watermarks(consumer, TopicPartition(topic, partition), timeout)
            if high > low:
                ranges[partition] = (max(low, high - limit), high)
        return _consume_ranges(consumer, topic, ranges, timeout)
    except KafkaException as exc:
        raise BrokerUnreachable(f"Kafka broker(s) {bootstrap_servers}: {exc}") from exc
    finally:
        consumer.close()


def read_kafka_record(
    bootstrap_servers: str,
    topic: str,
    partition: int,
    offset: int,
    *,
    settings: Mapping[str, object] | None = None,
    timeout: float = 10.0,
) -> KafkaRecord | None:
    """The record at ``offset``, ``None`` when there is none (deleted by retention, or past
    the end)."""
    consumer = _reader(bootstrap_servers, settings)
    try:
        meta = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
        if meta is None or meta.error is not None or partition not in meta.partitions:
            return None
        low, high = watermarks(consumer, TopicPartition(topic, partition), timeout)
        if not low <= offset < high:
            return None
        found = _consume_ranges(consumer, topic, {partition: (offset, offset + 1)}, timeout)
        return found[0] if found else None
    except KafkaException as exc:
        raise BrokerUnreachable(f"Kafka broker(s) {bootstrap_servers}: {exc}") from exc
    finally:
        consumer.close()


def read_kafka_ranges(
    bootstrap_servers: str,
    topic: str,
    ranges: Mapping[int, tuple[int, int]],
    *,
    settings: Mapping[str, object] | None = None,
    timeout: float = 10.0,
) -> list[KafkaRecord]:
    """The records of ``[start, end)`` per partition (clamped to what the partition still
    holds; partitions that do not exist are left out), with one consumer."""
    consumer = _reader(bootstrap_servers, settings)
    try:
        meta = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
        if meta is None or meta.error is not None:
            return []
        clamped: dict[int, tuple[int, int]] = {}
        for partition, (start, end) in ranges.items():
            if partition not in meta.partitions:
                continue
            low, high = watermarks(consumer, TopicPartition(topic, partition), timeout)
            first, last = max(start, low), min(end, high)
            if first < last:
                clamped[partition] = (first, last)
        return _consume_ranges(consumer, topic, clamped, timeout)
    except KafkaException as exc:
        raise BrokerUnreachable(f"Kafka broker(s) {bootstrap_servers}: {exc}") from exc
    finally:
        consumer.close()


def _consume_ranges(
    consumer: Consumer, topic: str, ranges: Mapping[int, tuple[int, int]], timeout: float
) -> list[KafkaRecord]:
    """The records of ``[start, end)`` per partition, read until each end or ``timeout``."""
    if not ranges:
        return []
    consumer.assign([TopicPartition(topic, p, start) for p, (start, _) in ranges.items()])
    pending = {p: end for p, (_, end) in ranges.items()}
    found: list[KafkaRecord] = []
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        for message in consumer.consume(num_messages=500, timeout=0.5):
            partition = message.partition()
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF and partition is not None:
                    pending.pop(partition, None)
                    continue
                raise KafkaException(error)
            offset = message.offset()
            end = pending.get(partition) if partition is not None else None
            if partition is None or offset is None or end is None or offset >= end:
                continue
            kind, stamp = message.timestamp()
            value = message.value()
            raw_headers = cast("list[tuple[str, bytes | None]]", message.headers() or [])
            found.append(
                KafkaRecord(
                    topic=topic,
                    partition=partition,
                    offset=offset,
                    timestamp_ms=stamp if kind != 0 and stamp >= 0 else None,
                    value=value,
                    headers={key: item or b"" for key, item in raw_headers},
                )
            )
            if offset + 1 >= end:
                pending.pop(partition, None)
    consumer.unassign()
    return found


def kafka_letter(record: KafkaRecord) -> DeadLetter | None:
    """The dead letter a record holds (any of the Kafka sink's formats); ``None`` when the
    record is not one (not JSON, or not a dead letter's shape)."""
    location = {
        "kind": "kafka",
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
    }
    when = (
        datetime.fromtimestamp(record.timestamp_ms / 1000, UTC)
        if record.timestamp_ms is not None
        else None
    )
    try:
        document = json.loads(record.value or b"null")
    except (ValueError, UnicodeDecodeError):
        return None
    headers = record.headers
    ce_id = headers.get("ce_id")
    ce_time = (
        parse_time(headers["ce_time"].decode("utf-8", "replace")) if "ce_time" in headers else None
    )
    return letter_from_json(
        document,
        id=kafka_id(record.topic, record.partition, record.offset),
        when=ce_time or when,
        location=location,
        ce_id=ce_id.decode("utf-8", "replace") if ce_id else None,
    )


# -- files ------------------------------------------------------------------------------------

METADATA_DIR = "_spark_metadata"


def files_id(name: str, row: int) -> str:
    return f"files:{name}:{row}"


def parse_files_id(letter_id: str) -> tuple[str, int]:
    """``(file name, row)`` of a files dead letter's id; :class:`BadDeadLetterId`."""
    found = FILES_ID.match(letter_id)
    if found is None or found["file"].startswith("."):
        raise BadDeadLetterId(f"{letter_id!r} is not a files dead letter's id")
    return found["file"], int(found["row"])


def committed_files(directory: Path) -> list[Path]:
    """The data files of a files sink's ``directory`` that its ``_spark_metadata`` log lists
    as committed, newest first (by batch, then name); every ``part-*`` file when there is no
    log. Only plain files directly in ``directory``."""
    log = directory / METADATA_DIR
    if not log.is_dir():
        names = [p for p in directory.glob("part-*") if p.is_file()]
        return sorted(names, key=lambda p: (p.stat().st_mtime, p.name), reverse=True)
    batches: dict[str, int] = {}
    deleted: set[str] = set()
    for entry in log.iterdir():
        batch = entry.name.removesuffix(".compact")
        if not batch.isdigit():
            continue
        for line in entry.read_text("utf-8", "replace").splitlines()[1:]:
            try:
                item = json.loads(line)
            except ValueError:
                continue
            name = Path(str(item.get("path", ""))).name
            if item.get("action") == "delete":
                deleted.add(name)
            elif name:
                batches.setdefault(name, int(batch))
    files = [directory / name for name in batches if name not in deleted]
    found = [p for p in files if p.is_file() and p.parent == directory]
    return sorted(found, key=lambda p: (batches[p.name], p.name), reverse=True)


def file_documents(path: Path, file_format: str) -> list[Any]:
    """The documents of one data file, in row order: each ``jsonl`` line parsed, or each
    ``parquet`` row as a CloudEvent (``data`` and ``extensions`` JSON text parsed)."""
    if file_format == "jsonl":
        rows: list[Any] = []
        for line in path.read_text("utf-8", "replace").splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                rows.append(None)
        return rows
    import pyarrow.parquet as pq  # only a parquet dead-letter directory needs it

    table = pq.read_table(path).to_pylist()
    return [_parquet_document(row) for row in table]


def _parquet_document(row: dict[str, Any]) -> Any:
    data = row.get("data")
    try:
        parsed = json.loads(data) if isinstance(data, str) else data
    except ValueError:
        return None
    if "specversion" not in row:
        return parsed
    document = {k: v for k, v in row.items() if k not in ("data", "extensions")}
    if isinstance(document.get("time"), datetime):
        document["time"] = document["time"].astimezone(UTC).isoformat()
    document["data"] = parsed
    return document


def files_letters(directory: Path, file_format: str, *, limit: int) -> list[DeadLetter]:
    """The newest ``limit`` dead letters of a files sink's directory, newest first."""
    found: list[DeadLetter] = []
    for path in committed_files(directory):
        when = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        documents = file_documents(path, file_format)
        for row in range(len(documents) - 1, -1, -1):
            letter = _file_letter(path.name, row, documents[row], when)
            if letter is not None:
                found.append(letter)
            if len(found) >= limit:
                return found
    return found


def files_letter(directory: Path, file_format: str, name: str, row: int) -> DeadLetter | None:
    """The dead letter at ``row`` of the committed file ``name``; ``None`` when none."""
    path = directory / name
    if path not in committed_files(directory):
        return None
    documents = file_documents(path, file_format)
    if not 0 <= row < len(documents):
        return None
    when = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return _file_letter(name, row, documents[row], when)


def _file_letter(name: str, row: int, document: Any, when: datetime) -> DeadLetter | None:
    location = {"kind": "files", "file": name, "row": row}
    return letter_from_json(document, id=files_id(name, row), when=when, location=location)


# -- JDBC -------------------------------------------------------------------------------------

JDBC_ID = re.compile(r"^jdbc:(?P<key>[A-Za-z0-9_-]{1,400})$")


def jdbc_id(row_id: str) -> str:
    """``jdbc:<the row's id, base64url>``: a table's ids are event ids, which may hold ``/``."""
    return "jdbc:" + base64.urlsafe_b64encode(row_id.encode()).decode().rstrip("=")


def parse_jdbc_id(letter_id: str) -> str:
    """The row id of a JDBC dead letter's id; :class:`BadDeadLetterId`."""
    found = JDBC_ID.match(letter_id)
    if found is None:
        raise BadDeadLetterId(f"{letter_id!r} is not a JDBC dead letter's id")
    key = found["key"]
    try:
        return base64.urlsafe_b64decode(key + "=" * (-len(key) % 4)).decode()
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadDeadLetterId(f"{letter_id!r} is not a JDBC dead letter's id") from exc


def jdbc_letters(
    config: JdbcSinkConfig, *, limit: int, row_id: str | None = None
) -> list[DeadLetter]:
    """The newest ``limit`` dead letters of the JDBC sink's table (by ``written_at``), or the
    one row ``row_id``; none when the table does not exist yet. The database is reached as
    the sink reaches it: SQLite under the files roots, PostgreSQL through the address guard
    (``SLUICE_JDBC_SINK_ALLOW``), read only."""
    table = ".".join(f'"{name}"' for name in config.table.split("."))
    where = " WHERE id = {p}" if row_id is not None else ""
    query = (
        f"SELECT id, data, written_at FROM {table}{where} "
        "ORDER BY written_at DESC, id DESC LIMIT {p}"
    )
    arguments: tuple[Any, ...] = (row_id, limit) if row_id is not None else (limit,)
    if config.dialect == "sqlite":
        rows = _sqlite_rows(config, query.replace("{p}", "?"), arguments)
    else:
        rows = _postgresql_rows(config, query.replace("{p}", "%s"), arguments)
    found = []
    for key, data, written_at in rows:
        document = json.loads(data) if isinstance(data, str) else data
        when = written_at if isinstance(written_at, datetime) else parse_time(written_at)
        location = {"kind": "jdbc", "table": config.table, "id": key}
        letter = letter_from_json(document, id=jdbc_id(str(key)), when=when, location=location)
        if letter is not None:
            found.append(letter)
    return found


def _sqlite_rows(config: JdbcSinkConfig, query: str, arguments: tuple[Any, ...]) -> list[Any]:
    import sqlite3

    path = sqlite_file(config.url)
    if not path.is_file():
        return []
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)) as connection:
        try:
            return connection.execute(query, arguments).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []
            raise BrokerUnreachable(f"the dead-letter database {path}: {exc}") from exc


def _postgresql_rows(config: JdbcSinkConfig, query: str, arguments: tuple[Any, ...]) -> list[Any]:
    import psycopg

    target = postgresql_target(config.url)
    parameters: dict[str, Any] = {
        "host": target.host,
        "port": target.port,
        "dbname": target.dbname,
        "connect_timeout": 10,
        **target.parameters,
        "user": config.user or target.user,
        "password": config.password,
    }
    parameters = {name: value for name, value in parameters.items() if value is not None}
    try:
        addresses = vetted_ips(target.host, target.port, allow_list(JDBC_SINK))
    except OSError as exc:
        raise BrokerUnreachable(f"cannot resolve {target.host}: {exc}") from exc
    last: Exception = OSError(f"{target.host} resolves to no address")
    for address in addresses:
        try:
            with psycopg.connect(hostaddr=address, **parameters) as connection:
                connection.read_only = True
                with connection.cursor() as cursor:
                    try:
                        cursor.execute(query.encode(), arguments)
                    except psycopg.errors.UndefinedTable:
                        return []
                    return cursor.fetchall()
        except psycopg.OperationalError as exc:
            last = exc
    raise BrokerUnreachable(f"the dead-letter database {target.host}: {last}") from last


# -- writing a redrive ------------------------------------------------------------------------


@dataclass(frozen=True)
class OutgoingRecord:
    value: bytes
    headers: Sequence[tuple[str, bytes]]
    key: bytes | None = None


def ensure_redrive_topic(
    bootstrap_servers: str,
    topic: str,
    *,
    replication: TopicReplication,
    settings: Mapping[str, object] | None = None,
    timeout: float = 10.0,
) -> None:
    """Create the one-partition ``topic`` unless it exists (a redrive's records stay in the
    order they were selected), replicated as ``replication`` says. Raises
    :class:`BrokerUnreachable` when the brokers do not answer or refuse it."""
    try:
        create_topic(
            bootstrap_servers,
            topic,
            partitions=1,
            replication=replication,
            settings=settings,
            timeout=timeout,
        )
    except BrokerUnreachable:
        raise
    except RuntimeUnavailable as exc:
        raise BrokerUnreachable(f"could not create topic {topic!r}: {exc}") from exc


def produce_confirmed(
    bootstrap_servers: str,
    topic: str,
    records: Sequence[OutgoingRecord],
    *,
    settings: Mapping[str, object] | None = None,
    timeout: float = 30.0,
) -> list[tuple[int, int]]:
    """Write ``records`` to ``topic`` in order (acks=all, idempotent) and wait for Kafka to
    confirm every one; ``(partition, offset)`` per record. Raises :class:`BrokerUnreachable`
    naming how many were not confirmed (those confirmed stay written)."""
    writer = producer(
        bootstrap_servers,
        settings,
        {"linger.ms": 5, "message.timeout.ms": int(timeout * 1000)},
    )
    placed: list[tuple[int, int] | None] = [None] * len(records)
    errors: list[str] = []

    def reporter(index: int) -> Any:
        def on_delivery(error: KafkaError | None, message: Any) -> None:
            if error is None:
                placed[index] = (message.partition(), message.offset())
            else:
                errors.append(error.str())

        return on_delivery

    for index, record in enumerate(records):
        while True:
            try:
                writer.produce(
                    topic,
                    record.value,
                    record.key,
                    headers=list(record.headers),
                    on_delivery=reporter(index),
                )
                break
            except BufferError:
                writer.poll(0.1)
        writer.poll(0)
    writer.flush(timeout + 2.0)
    missing = sum(1 for p in placed if p is None)
    if missing:
        why = errors[0] if errors else "no delivery report in time"
        raise BrokerUnreachable(
            f"Kafka confirmed {len(records) - missing} of {len(records)} records to {topic!r}: "
            f"{why}"
        )
    return [p for p in placed if p is not None]


def records_of(letters: Sequence[DeadLetter]) -> Iterator[DeadLetter]:
    """``letters`` in their origin order (topic, partition, offset; unknown origins last)."""
    yield from sorted(
        letters,
        key=lambda d: (
            d.origin_topic is None,
            d.origin_topic or "",
            d.origin_partition if d.origin_partition is not None else -1,
            d.origin_offset if d.origin_offset is not None else -1,
        ),
    )
