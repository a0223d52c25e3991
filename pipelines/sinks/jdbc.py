"""JDBC sink: upsert events into a PostgreSQL or SQLite table, one row per event id.

Each micro-batch is written by the driver (``foreachBatch``) in ONE database transaction:
the table is created when missing, then the rows are upserted (``INSERT ... ON CONFLICT (id)
DO UPDATE``) in statement batches of ``batch_size``. Spark replays a micro-batch that did not
commit, so delivery is at-least-once; the upsert on the event id makes a replay rewrite the
same rows, so the table ends up as if each event were written once.

Table columns: ``id`` (primary key), ``source``, ``type``, ``time`` (RFC 3339 UTC text in
SQLite, ``timestamptz`` in PostgreSQL), ``subject``, ``data`` (JSON text in SQLite, ``jsonb``
in PostgreSQL: the whole event or only its data, see ``content``) and ``written_at``. PostgreSQL
is reached with psycopg, SQLite with the standard library; the password is passed to psycopg
as a parameter, never put into a URL or a message.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import closing
from itertools import islice
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.streaming import DataStreamWriter

from pipelines import native
from pipelines.cloudevents import event_json, time_text
from pipelines.spec.configs.jdbc import JdbcSinkConfig

ROW_COLUMNS = ("id", "source", "type", "time", "subject", "data")
Row = tuple[Any, ...]


def events_to_rows(events: DataFrame, config: JdbcSinkConfig) -> DataFrame:
    """The table's columns (all text) of each event: id, source, type, time, subject, data."""
    if config.content == "cloudevents":
        data = event_json(native.json_zone(events))
    else:
        data = native.to_json(events, "data")
    return events.select(
        "id", "source", "type", time_text("time").alias("time"), "subject", data.alias("data")
    )


def write_jdbc(events: DataFrame, config: JdbcSinkConfig) -> DataStreamWriter:
    """A streaming writer upserting each micro-batch into the configured table."""

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        upsert_rows(config, (tuple(row) for row in batch.toLocalIterator()))

    rows = events_to_rows(events, config)
    return rows.writeStream.foreachBatch(write_batch).outputMode("append")


def write_jdbc_batch(events: DataFrame, config: JdbcSinkConfig, batch_id: int) -> None:
    """Upsert one micro-batch (from ``foreachBatch``) in one transaction."""
    rows = events_to_rows(events, config)
    upsert_rows(config, (tuple(row) for row in rows.toLocalIterator()))


def upsert_rows(config: JdbcSinkConfig, rows: Iterable[Row]) -> int:
    """Create the table if missing and upsert ``rows`` (``ROW_COLUMNS``) in one transaction.

    Returns how many rows were sent. On any error nothing of this call is committed.
    """
    if config.dialect == "sqlite":
        return _upsert_sqlite(config, rows)
    return _upsert_postgresql(config, rows)


def sqlite_path(url: str) -> Path:
    """The file of a ``sqlite:///relative.db`` or ``sqlite:////absolute.db`` URL."""
    return Path(url.removeprefix("sqlite:///"))


def _upsert_sqlite(config: JdbcSinkConfig, rows: Iterable[Row]) -> int:
    path = sqlite_path(config.url)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = _quoted(config.table)
    create = (
        f"CREATE TABLE IF NOT EXISTS {table} (id TEXT PRIMARY KEY, source TEXT NOT NULL, "
        "type TEXT NOT NULL, time TEXT, subject TEXT, data TEXT, written_at TEXT NOT NULL)"
    )
    insert = (
        f"INSERT INTO {table} (id, source, type, time, subject, data, written_at) "
        "VALUES (?, ?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) "
        f"ON CONFLICT (id) DO UPDATE SET {_updates()}"
    )
    sent = 0
    # isolation_level=None: this code opens and ends the one transaction itself.
    with closing(sqlite3.connect(path, timeout=30, isolation_level=None)) as connection:
        connection.execute("BEGIN IMMEDIATE")
        try:
            connection.execute(create)
            for chunk in _chunks(rows, config.batch_size):
                connection.executemany(insert, chunk)
                sent += len(chunk)
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
    return sent


def _upsert_postgresql(config: JdbcSinkConfig, rows: Iterable[Row]) -> int:
    import psycopg  # only PostgreSQL channels need it

    table = _quoted(config.table)
    create = (
        f"CREATE TABLE IF NOT EXISTS {table} (id TEXT PRIMARY KEY, source TEXT NOT NULL, "
        "type TEXT NOT NULL, time TIMESTAMPTZ, subject TEXT, data JSONB, "
        "written_at TIMESTAMPTZ NOT NULL DEFAULT now())"
    )
    insert = (
        f"INSERT INTO {table} (id, source, type, time, subject, data, written_at) "
        "VALUES (%s, %s, %s, %s::timestamptz, %s, %s::jsonb, now()) "
        f"ON CONFLICT (id) DO UPDATE SET {_updates()}"
    )
    credentials = {"user": config.user, "password": config.password}
    connection = psycopg.connect(
        config.url,
        connect_timeout=10,
        **{name: value for name, value in credentials.items() if value is not None},
    )
    sent = 0
    # Leaving the connection's block commits, or rolls back on an error.
    with connection, connection.cursor() as cursor:
        cursor.execute(create)
        for chunk in _chunks(rows, config.batch_size):
            cursor.executemany(insert, chunk)
            sent += len(chunk)
    return sent


def _updates() -> str:
    return ", ".join(f"{name} = excluded.{name}" for name in (*ROW_COLUMNS[1:], "written_at"))


def _quoted(table: str) -> str:
    return ".".join(f'"{name}"' for name in table.split("."))


def _chunks(rows: Iterable[Row], size: int) -> Iterator[list[Row]]:
    iterator = iter(rows)
    while chunk := list(islice(iterator, size)):
        yield chunk
