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

Right before each connection the target is checked again with the functions the spec
validation used (:mod:`pipelines.spec.configs.jdbc`):

* PostgreSQL - the URL is parsed into the parameters psycopg gets (never the URL itself, so
  libpq reads nothing the check did not see); the host is resolved once, every address it
  resolves to must pass the address guard (:func:`pipelines.net.vetted_ips`, allow-list
  ``SLUICE_JDBC_SINK_ALLOW``), and libpq connects to the checked address (``hostaddr``)
  while ``host`` stays the name (TLS verifies against it). A refusal raises
  :class:`~pipelines.net.ForbiddenAddress` and nothing is sent.
* SQLite - the file is resolved again under the files roots (a symlink may have changed
  since the spec was saved) and the resolved file is opened.
"""

from __future__ import annotations

import socket
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import closing
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame
from pyspark.sql.streaming.readwriter import DataStreamWriter

from pipelines import native
from pipelines.cloudevents import event_json, time_text
from pipelines.net import JDBC_SINK, allow_list, vetted_ips
from pipelines.spec.configs.jdbc import (
    JdbcSinkConfig,
    PostgresqlTarget,
    postgresql_target,
    sqlite_file,
)
from pipelines.spec.reach import carried

if TYPE_CHECKING:
    import psycopg  # imported where it connects: only PostgreSQL channels need it

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
    return rows.writeStream.foreachBatch(carried(write_batch)).outputMode("append")


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
    """The checked, resolved file of a ``sqlite:///relative.db`` (relative to the first files
    root) or ``sqlite:////absolute.db`` URL; ``ValueError`` when it is not allowed."""
    try:
        return sqlite_file(url)
    except ValueError as error:
        raise ValueError(f"jdbc sink: {error}") from None


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
    connection = connect_postgresql(config)
    sent = 0
    # Leaving the connection's block commits, or rolls back on an error.
    with connection, connection.cursor() as cursor:
        cursor.execute(create)
        for chunk in _chunks(rows, config.batch_size):
            cursor.executemany(insert, chunk)
            sent += len(chunk)
    return sent


def postgresql_parameters(config: JdbcSinkConfig) -> tuple[PostgresqlTarget, dict[str, Any]]:
    """The checked target of ``config.url`` and the psycopg parameters (no ``hostaddr`` yet)."""
    try:
        target = postgresql_target(config.url)
    except ValueError as error:
        raise ValueError(f"jdbc sink: url {error}") from None
    parameters: dict[str, Any] = {
        "host": target.host,
        "port": target.port,
        "dbname": target.dbname,
        "connect_timeout": 10,
        **target.parameters,
        "user": config.user or target.user,
        "password": config.password,
    }
    return target, {name: value for name, value in parameters.items() if value is not None}


def connect_postgresql(config: JdbcSinkConfig) -> psycopg.Connection[tuple[Any, ...]]:
    """A psycopg connection to a checked address of the configured host.

    The host is resolved once; :class:`~pipelines.net.ForbiddenAddress` when any address is
    forbidden (nothing is sent). Each allowed address is tried in turn, pinned with
    ``hostaddr``; the last failure is raised when none answers.
    """
    import psycopg  # only PostgreSQL channels need it

    target, parameters = postgresql_parameters(config)
    try:
        addresses = vetted_ips(target.host, target.port, allow_list(JDBC_SINK))
    except socket.gaierror as error:
        raise OSError(f"jdbc sink: cannot resolve {target.host}: {error}") from None
    last: Exception = OSError(f"jdbc sink: {target.host} resolves to no address")
    for address in addresses:
        try:
            return psycopg.connect(hostaddr=address, **parameters)
        except psycopg.OperationalError as error:  # refused, timed out: try the next address
            last = error
    raise last


def _updates() -> str:
    return ", ".join(f"{name} = excluded.{name}" for name in (*ROW_COLUMNS[1:], "written_at"))


def _quoted(table: str) -> str:
    return ".".join(f'"{name}"' for name in table.split("."))


def _chunks(rows: Iterable[Row], size: int) -> Iterator[list[Row]]:
    iterator = iter(rows)
    while chunk := list(islice(iterator, size)):
        yield chunk
