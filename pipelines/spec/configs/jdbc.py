"""Config model of the JDBC sink (PostgreSQL, and SQLite for the embedded default)."""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import urlsplit

from pydantic import ConfigDict, Field, field_validator

from pipelines.spec.configs.base import Secret, StageConfig

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


class JdbcSinkConfig(StageConfig):
    """Upsert events into a database table, one row per event id."""

    model_config = ConfigDict(title="JDBC sink")

    url: str = Field(
        title="Database URL",
        description=(
            "postgresql://host:port/database, or sqlite:///relative/path.db "
            "(sqlite:////absolute/path.db). Give the password in its own field."
        ),
        examples=["postgresql://db.example.com:5432/events", "sqlite:///var/events.db"],
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

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        if value.startswith("sqlite:///"):
            if len(value) == len("sqlite:///"):
                raise ValueError("name the database file: sqlite:///path/to/file.db")
            return value
        if not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("must start with postgresql:// or sqlite:///")
        parts = urlsplit(value)
        if parts.password is not None:
            raise ValueError("must not contain a password: use the password field")
        if not parts.hostname or not parts.path.strip("/"):
            raise ValueError("must name a host and a database: postgresql://host:5432/database")
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
        return "sqlite" if self.url.startswith("sqlite:") else "postgresql"
