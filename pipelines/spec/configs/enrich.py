"""Config model of the enrich transform (EventBridge Pipes' enrichment step).

Each event's ``input`` (a JSONPath into its CloudEvents JSON form: the whole event, ``data``
or one field) is sent as JSON to ``url``, alone or with ``batch_size - 1`` others as a JSON
array; the answer is put ``into`` the event's data. Address guard, write-only auth, static
headers and the retry policy are the ``http`` sink's
(:mod:`pipelines.spec.configs.http_sink`), with an allow-list of its own,
``SLUICE_HTTP_ENRICH_ALLOW``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import ConfigDict, Field, field_validator

from pipelines.net import HTTP_ENRICH, Outbound
from pipelines.spec.configs.base import StageConfig
from pipelines.spec.configs.http_sink import HttpEndpointConfig, HttpRetry
from pipelines.spec.fieldpaths import (
    READS_JSONPATH,
    WRITES_FIELD,
    parse_field_path,
    parse_json_path,
)

WHOLE_EVENT = "$"
MERGE_INTO_DATA = "data"
MAX_BATCH_SIZE = 500
MAX_CONCURRENCY = 64


class EnrichCache(StageConfig):
    """Answers kept per Python worker process, keyed on what is sent (bounded, LRU)."""

    model_config = ConfigDict(title="Cache")

    ttl_seconds: float = Field(
        0,
        ge=0,
        le=86_400,
        title="Time to live (s)",
        description=(
            "How long an answer is reused for the same input; 0 turns the cache off (every "
            "event is sent)."
        ),
        examples=[60],
    )
    max_entries: int = Field(
        10_000,
        ge=1,
        le=1_000_000,
        title="Max entries",
        description=(
            "Answers kept per Python worker process (least recently used ones go first; "
            "also at most 64 MiB of answers)."
        ),
    )


def _title_nested(schema: dict[str, Any]) -> None:
    """Give the ``cache`` and ``retry`` properties titles (pydantic leaves them off a $ref)."""
    schema["properties"]["cache"]["title"] = "Cache"
    schema["properties"]["retry"]["title"] = "Retry policy"


class EnrichConfig(HttpEndpointConfig):
    """Call an HTTP endpoint for each event (or each batch of events) and merge its answer."""

    model_config = ConfigDict(title="Enrich", json_schema_extra=_title_nested)
    outbound: ClassVar[Outbound] = HTTP_ENRICH

    input: str = Field(
        "$.data",
        title="Input",
        description=(
            "What is sent for each event: $ (the whole event as CloudEvents JSON), $.data, or "
            "one value such as $.data.customer_id (a JSONPath). An event without that value "
            "fails (MissingField)."
        ),
        examples=["$.data.customer_id"],
        json_schema_extra=READS_JSONPATH,
    )
    into: str = Field(
        MERGE_INTO_DATA,
        title="Into",
        description=(
            "Where the answer goes: data (the answer must be a JSON object; its members are "
            "merged into data, replacing members of the same name) or a path inside data "
            "(data.customer: set to the answer, missing parent objects created)."
        ),
        examples=["data.customer"],
        json_schema_extra=WRITES_FIELD,
    )
    batch_size: int = Field(
        1,
        ge=1,
        le=MAX_BATCH_SIZE,
        title="Batch size",
        description=(
            "Events per request. 1: the body is the event's input and the answer its "
            "enrichment. More: the body is a JSON array of up to this many inputs and the "
            "answer must be an array of as many answers, in the same order."
        ),
    )
    max_concurrency: int = Field(
        4,
        ge=1,
        le=MAX_CONCURRENCY,
        title="Max requests in flight",
        description="Requests one Spark task has in flight at once.",
    )
    connect_timeout_seconds: float = Field(
        3, gt=0, le=60, title="Connect timeout (s)", description="Upper bound of connecting."
    )
    read_timeout_seconds: float = Field(
        10,
        gt=0,
        le=300,
        title="Read timeout (s)",
        description="Upper bound of each wait for the answer's bytes.",
    )
    cache: EnrichCache = Field(
        EnrichCache(), title="Cache", description="Reuse answers for the same input."
    )
    retry: HttpRetry = Field(
        HttpRetry(),
        title="Retry policy",
        description=(
            "Attempts, backoff and the maximum age of an event. Connection errors, timeouts, "
            "408, 429 and 5xx are retried; an event still failing then fails this stage."
        ),
    )

    @field_validator("input")
    @classmethod
    def _check_input(cls, value: str) -> str:
        if value != WHOLE_EVENT:
            parse_json_path(value)
        return value

    @field_validator("into")
    @classmethod
    def _check_into(cls, value: str) -> str:
        if value != MERGE_INTO_DATA:
            try:
                parse_field_path(value, data_only=True)
            except ValueError:
                raise ValueError(
                    f"{value!r} must be data (merge the answer into it) or a path inside "
                    "data such as data.customer"
                ) from None
        return value

    @property
    def merges(self) -> bool:
        """Whether the answer's members are merged into data (``into: data``)."""
        return self.into == MERGE_INTO_DATA
