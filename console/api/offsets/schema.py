"""OpenAPI answers and examples of the offsets operations."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse

from console.api.offsets.serializers import OffsetsMessageSerializer

OFFSETS_CONFLICT = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description=(
        "The channel is not STOPPED (target STOPPED and connector STOPPED or UNASSIGNED), or "
        "the change cannot be made from where it is; nothing changed."
    ),
    examples=[
        OpenApiExample(
            "Running channel",
            value={
                "detail": "channel 'orders' is RUNNING: stop it before you alter its offsets "
                "(offsets can change only while it is STOPPED)"
            },
        )
    ],
)
OFFSETS_INVALID = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description=(
        "The request is not a valid change (each key is the path of a bad field), or the "
        "channel's source has no offsets to move (detail)."
    ),
    examples=[
        OpenApiExample(
            "Bad offset",
            value={"offsets[0].offset.offset": ["Required: the next offset to read (0 or more)."]},
        )
    ],
)
OFFSETS_CHANGED = OpenApiResponse(
    response=OffsetsMessageSerializer,
    description="Recorded; the connector's next start resumes exactly from the new offsets.",
)
OFFSETS_EXAMPLE = OpenApiExample(
    "Two partitions",
    response_only=True,
    status_codes=["200"],
    value={
        "offsets": [
            {"partition": {"topic": "orders", "partition": 0}, "offset": {"offset": 42}},
            {"partition": {"topic": "orders", "partition": 1}, "offset": {"offset": 17}},
        ],
        "note": "",
    },
)
