"""Config models of the files source and sink (a directory of files)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, field_validator

from pipelines.spec.configs.base import StageConfig
from pipelines.spec.configs.retry import RETRY_FIELD, SinkRetry
from pipelines.spec.paths import FILES_ROOTS_ENV, FILES_SCHEMES_ENV, resolve_files_location

_PATH_DESCRIPTION = (
    f"A directory under the files roots ({FILES_ROOTS_ENV}; by default the data/ folder of "
    "the installation): an absolute path, a file:/// URI, or a path relative to the first "
    "root. It must not lead (also through a symlink) outside the roots or into Sluice's own "
    "var/ directory. Other schemes (hdfs://, s3a://) only where an operator allows them "
    f"({FILES_SCHEMES_ENV}). Every executor must see the same directory."
)


def check_files_path(value: str) -> str:
    """Return ``value`` unchanged if it names an allowed location (see
    :mod:`pipelines.spec.paths`), else raise ``ValueError`` (a field error)."""
    resolve_files_location(value)
    return value


class FilesSourceConfig(StageConfig):
    """Read a directory of JSON lines, CSV or Parquet files, picking up files as they arrive."""

    model_config = ConfigDict(title="Files source")

    path: str = Field(
        title="Directory",
        description=(
            f"{_PATH_DESCRIPTION} Each file is read once, when first seen: move complete files "
            "in (write elsewhere, then rename) rather than writing them in place."
        ),
        examples=["inbox"],
        min_length=1,
    )
    format: Literal["jsonl", "csv", "parquet"] = Field(
        "jsonl",
        title="File format",
        description=(
            "jsonl: one JSON document per line (blank lines are skipped). csv: one record per "
            "line, each becoming an object of strings. parquet: each row becomes an object; "
            "the schema is read from the files present when the channel starts."
        ),
    )
    file_pattern: str | None = Field(
        None,
        title="File name pattern",
        description="Only read files whose name matches this glob, e.g. *.jsonl.",
        examples=["*.jsonl"],
        min_length=1,
    )
    max_files_per_trigger: int | None = Field(
        None,
        title="Files per micro-batch",
        description="At most this many new files per micro-batch (no limit when empty).",
        ge=1,
    )
    csv_header: bool = Field(
        True,
        title="CSV header",
        description=(
            "csv: the first line of each file names the columns. Without a header the "
            "columns are named _c0, _c1, ..."
        ),
    )
    csv_delimiter: str = Field(
        ",",
        title="CSV delimiter",
        description="csv: the character between fields.",
    )

    @field_validator("path")
    @classmethod
    def _check_path(cls, value: str) -> str:
        return check_files_path(value)

    @field_validator("csv_delimiter")
    @classmethod
    def _check_delimiter(cls, value: str) -> str:
        if len(value) != 1 or value in '"\r\n':
            raise ValueError("must be one character other than a quote or a line break")
        return value


class FilesSinkConfig(StageConfig):
    """Write events to a directory as Parquet or JSON lines files, exactly once."""

    model_config = ConfigDict(title="Files sink")

    path: str = Field(
        title="Directory", description=_PATH_DESCRIPTION, examples=["outbox"], min_length=1
    )
    format: Literal["parquet", "jsonl"] = Field(
        "parquet",
        title="File format",
        description=(
            "parquet: one row per event. jsonl: one JSON document per line. Files are listed "
            "in the directory's _spark_metadata log once committed; read them with Spark (or "
            "skip files not in the log) to see each event exactly once."
        ),
    )
    content: Literal["data", "cloudevents"] = Field(
        "data",
        title="Content",
        description=(
            "data: the event's data as JSON (parquet: one column data). cloudevents: the whole "
            "event (jsonl: structured-mode CloudEvents JSON; parquet: one column per "
            "attribute, extensions and data as JSON text)."
        ),
    )
    retry: SinkRetry | None = RETRY_FIELD

    @field_validator("path")
    @classmethod
    def _check_path(cls, value: str) -> str:
        return check_files_path(value)
