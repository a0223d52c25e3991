"""OpenAPI answers of the channel operations that are theirs alone (the shared ones are in
:mod:`console.api.responses`)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse

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
        )
    ],
)
