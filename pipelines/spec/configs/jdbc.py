"""Config model of the JDBC sink (PostgreSQL, and SQLite for the embedded default).

The URL reaches the network or the file system of the drivers' host, so it is checked
against allow-lists, here at spec validation and again by the sink right before it connects
(:mod:`pipelines.sinks.jdbc`), with the same functions:

* PostgreSQL: one host (a DNS name or an address), port 1-65535, a database, no password,
  no control characters or spaces anywhere (also percent-encoded), and no connection
  parameters but ``sslmode`` (one of libpq's modes), ``connect_timeout`` (1-300 seconds) and
  ``application_name`` (printable ASCII, up to 63 characters): ``options``, ``host``,
  ``hostaddr``, ``service``, ``passfile``, ``sslrootcert`` and every other libpq parameter
  are refused. The host goes through the HTTP sink's address guard (:mod:`pipelines.net`)
  with an allow-list of its own, ``SLUICE_JDBC_SINK_ALLOW``.
* SQLite: the file must resolve under the files roots and never into Sluice's own ``var/``
  (:mod:`pipelines.spec.paths`); a relative path is relative to the first root.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qsl, unquote, urlsplit

from pydantic import ConfigDict, Field, field_validator

from pipelines.net import JDBC_SINK, address_literal, check_url_host
from pipelines.spec.configs.base import Secret, StageConfig
from pipelines.spec.configs.retry import RETRY_FIELD, SinkRetry
from pipelines.spec.paths import FILES_ROOTS_ENV, resolve_local_path

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_CONTROL_OR_SPACE = re.compile(r"[\x00-\x20\x7f]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
_HOST_NAME = re.compile(rf"(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*\.?")
_APPLICATION_NAME = re.compile(r"[\x21-\x7e]{1,63}")
SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
POSTGRESQL_PARAMETERS = ("application_name", "connect_timeout", "sslmode")
"""The only libpq connection parameters a URL may carry."""
SQLITE_PREFIX = "sqlite:///"


@dataclass(frozen=True)
class PostgresqlTarget:
    """Where a PostgreSQL URL connects: what the sink hands psycopg (never the URL itself)."""

    host: str
    port: int
    dbname: str
    user: str | None = None
    parameters: dict[str, str] = field(default_factory=dict)


def postgresql_target(url: str) -> PostgresqlTarget:
    """Parse and check a ``postgresql://`` URL (see the module docstring).

    Raises ``ValueError`` with a message fit for a field error; the address guard runs
    without DNS (the sink resolves and checks again when it connects).
    """
    if _CONTROL_OR_SPACE.search(url):
        raise ValueError("must not contain spaces, line breaks or other control characters")
    if not url.startswith(("postgresql://", "postgres://")):
        raise ValueError("must start with postgresql:// or sqlite:///")
    parts = urlsplit(url)
    if parts.password is not None:
        raise ValueError("must not contain a password: use the password field")
    if parts.fragment:
        raise ValueError("must not have a #fragment")
    try:
        port = parts.port
    except ValueError:
        raise ValueError("the port must be a number from 1 to 65535") from None
    if port == 0:
        raise ValueError("the port must be a number from 1 to 65535")
    host = parts.hostname or ""
    dbname = unquote(parts.path[1:])
    if not host or not dbname:
        raise ValueError("must name a host and a database: postgresql://host:5432/database")
    if not _HOST_NAME.fullmatch(host) and (address_literal(host) is None or "%" in host):
        raise ValueError(f"{host!r} is not one host name or address")
    check_url_host(host, outbound=JDBC_SINK)
    user = unquote(parts.username) if parts.username else None
    if _CONTROL.search(dbname) or "/" in dbname:
        raise ValueError("the database name must not contain control characters or '/'")
    if user is not None and _CONTROL.search(user):
        raise ValueError("the user name must not contain control characters")
    return PostgresqlTarget(host, port or 5432, dbname, user, _parameters(parts.query))


def _parameters(query: str) -> dict[str, str]:
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise ValueError("the query string is not name=value pairs joined by &") from None
    parameters: dict[str, str] = {}
    for name, value in pairs:
        if name not in POSTGRESQL_PARAMETERS:
            raise ValueError(
                f"connection parameter {name!r} is not allowed; only "
                f"{', '.join(POSTGRESQL_PARAMETERS)}"
            )
        if name in parameters:
            raise ValueError(f"connection parameter {name!r} is given twice")
        _check_parameter(name, value)
        parameters[name] = value
    return parameters


def _check_parameter(name: str, value: str) -> None:
    if name == "sslmode" and value not in SSL_MODES:
        raise ValueError(f"sslmode must be one of {', '.join(SSL_MODES)}")
    if name == "connect_timeout" and not (value.isdigit() and 1 <= int(value) <= 300):
        raise ValueError("connect_timeout must be a whole number of seconds from 1 to 300")
    if name == "application_name" and not _APPLICATION_NAME.fullmatch(value):
        raise ValueError("application_name must be 1-63 printable ASCII characters, no spaces")


def sqlite_file(url: str) -> Path:
    """The resolved file of a ``sqlite:///relative.db`` or ``sqlite:////absolute.db`` URL,
    under the files roots; ``ValueError`` (a field error) otherwise."""
    text = url.removeprefix(SQLITE_PREFIX)
    if not text:
        raise ValueError("name the database file: sqlite:///path/to/file.db")
    try:
        return resolve_local_path(text)
    except ValueError as error:
        raise ValueError(f"the SQLite file {error}") from None


class JdbcSinkConfig(StageConfig):
    """Upsert events into a database table, one row per event id."""

    model_config = ConfigDict(title="JDBC sink")

    url: str = Field(
        title="Database URL",
        description=(
            "postgresql://host:port/database (optionally ?sslmode=...&connect_timeout=..."
            "&application_name=..., no other parameter; loopback, private and link-local "
            "hosts only where SLUICE_JDBC_SINK_ALLOW names them), or sqlite:///path.db, "
            "relative to the first files root, or sqlite:////absolute/path.db under a files "
            f"root ({FILES_ROOTS_ENV}). Give the password in its own field."
        ),
        examples=["postgresql://db.example.com:5432/events", "sqlite:///events.db"],
    )
    table: str = Field(
        "events",
        title="Table",
        description=(
            "Created when missing: id (primary key), source, type, time, subject, data, "
            "written_at. PostgreSQL accepts schema.table."
        ),
    )
    user: str | None = Field(None, title="User", description="PostgreSQL only.")
    password: Secret | None = Field(None, title="Password", description="PostgreSQL only.")
    batch_size: int = Field(
        500,
        ge=1,
        le=10_000,
        title="Batch size",
        description="Rows sent per statement batch; each micro-batch is one transaction.",
    )
    content: Literal["cloudevents", "data"] = Field(
        "cloudevents",
        title="Content of the data column",
        description=(
            "cloudevents: the whole event in its CloudEvents JSON form (extensions included). "
            "data: only the event's data."
        ),
    )
    retry: SinkRetry | None = RETRY_FIELD

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        if value.startswith(SQLITE_PREFIX):
            sqlite_file(value)
        else:
            postgresql_target(value)
        return value

    @field_validator("user")
    @classmethod
    def _check_user(cls, value: str | None) -> str | None:
        if value is not None and (not value or _CONTROL.search(value)):
            raise ValueError("must be non-empty, without control characters")
        return value

    @field_validator("table")
    @classmethod
    def _check_table(cls, value: str) -> str:
        names = value.split(".")
        if len(names) > 2 or not all(_IDENTIFIER.fullmatch(name) for name in names):
            raise ValueError(
                f"{value!r} is not a table name (letters, digits and _, optionally schema.table)"
            )
        return value

    @property
    def dialect(self) -> Literal["sqlite", "postgresql"]:
        return "sqlite" if self.url.startswith(SQLITE_PREFIX) else "postgresql"

    @classmethod
    def secret_binding(cls, config: dict[str, object]) -> dict[str, object]:
        """What the password authenticates to (:mod:`pipelines.spec.secrets`): for PostgreSQL
        the host (case aside), the port (5432 when left out), the database, the connection
        parameters (``sslmode`` among them: no downgrade) and the user (the field's, else the
        URL's); for SQLite, which takes no password, the URL."""
        from urllib.parse import parse_qsl, unquote, urlsplit

        from pipelines.spec.configs.http_sink import canonical_host

        url = config["url"]
        if not isinstance(url, str):
            raise TypeError("the url is not text")
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme == "sqlite":
            return {"url": url}
        return {
            "url scheme": "postgresql" if scheme == "postgres" else scheme,
            "url host": canonical_host(parts.hostname or ""),
            "url port": parts.port or 5432,
            "url database": unquote(parts.path.strip("/")),
            "url parameters": tuple(sorted(parse_qsl(parts.query, keep_blank_values=True))),
            "user": config.get("user") or (unquote(parts.username) if parts.username else None),
        }
