"""OpenAPI answers of the channel operations that are theirs alone (the shared ones are in
:mod:`console.api.responses`)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse

from console.api.responses import ErrorDetailSerializer

SPEC_ERRORS = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description=(
        "Invalid request; nothing was saved. Each key is the full path of a bad field, "
        "spec fields included."
    ),
    examples=[
        OpenApiExample(
            "Invalid spec",
            value={
                "spec.source.config.topics": ["Field required"],
                "spec.transforms[0].config.pattern": ["Unknown operator 'prefx'"],
            },
        ),
        OpenApiExample(
            "Invalid bus",
            value={
                "spec.rules[1].pattern": [
                    "data.amount[0].numeric: expected an operator and a number"
                ],
                "spec.rules[2].sinks[0].config.topic": ["Field required"],
                "spec.rules[3].name": [
                    "rules[0] is named 'big-orders' too; rule names are unique in a bus"
                ],
            },
        ),
    ],
)

SECRETS_UNREADABLE = OpenApiResponse(
    ErrorDetailSerializer,
    description="Stored secrets cannot be decrypted with the configured keys (a key is missing "
    "from SLUICE_SECRETS_KEY).",
)

_KAFKA = {"bootstrap_servers": "kafka:9092"}

BUS_SPEC = {
    "source": {"type": "kafka", "config": {**_KAFKA, "topics": ["orders"]}},
    "transforms": [],
    "rules": [
        {
            "name": "big-orders",
            "description": "Orders over 100, to review and to the warehouse",
            "enabled": True,
            "pattern": {"data": {"amount": [{"numeric": [">", 100]}]}},
            "transforms": [],
            "sinks": [
                {"type": "kafka", "config": {**_KAFKA, "topic": "big-orders"}},
                {"type": "files", "config": {"path": "big-orders", "format": "jsonl"}},
            ],
        },
        {
            "name": "everything",
            "pattern": None,
            "sinks": [{"type": "kafka", "config": {**_KAFKA, "topic": "orders-archive"}}],
        },
    ],
    "errors": {"tolerance": "all"},
}
"""A bus as the API takes it: one read of ``orders``, two rules, three targets."""

LINEAR_SPEC = {
    "source": {"type": "kafka", "config": {**_KAFKA, "topics": ["orders"]}},
    "transforms": [
        {"type": "filter", "config": {"pattern": {"data": {"amount": [{"numeric": [">", 100]}]}}}}
    ],
    "sink": {"type": "kafka", "config": {**_KAFKA, "topic": "big-orders"}},
}

CHANNEL_EXAMPLES = [
    OpenApiExample(
        "A linear channel",
        request_only=True,
        value={"name": "big-orders", "description": "", "spec": LINEAR_SPEC},
    ),
    OpenApiExample(
        "A bus (rules)",
        request_only=True,
        value={"name": "orders-bus", "description": "Routes orders", "spec": BUS_SPEC},
    ),
]

REVISION_DIFF_EXAMPLE = OpenApiExample(
    "A rule edited, another added",
    response_only=True,
    status_codes=["200"],
    value={
        "number": 3,
        "against": 2,
        "changes": [
            {
                "path": "rules[big-orders].pattern",
                "change": "changed",
                "before": {"data": {"amount": [{"numeric": [">", 100]}]}},
                "after": {"data": {"amount": [{"numeric": [">", 500]}]}},
            },
            {
                "path": "rules[eu-orders]",
                "change": "added",
                "before": None,
                "after": {
                    "name": "eu-orders",
                    "description": "",
                    "enabled": True,
                    "pattern": {"data": {"region": ["eu"]}},
                    "transforms": [],
                    "sinks": [{"type": "kafka", "config": {**_KAFKA, "topic": "eu-orders"}}],
                },
            },
        ],
    },
)
