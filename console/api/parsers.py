"""Request body parsers: JSON within the limits of :mod:`console.strict_json`, or a 400 (413
for a body over ``SLUICE_MAX_REQUEST_BYTES``), never a 500."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from console.strict_json import (
    TOP_LEVEL,
    JSONSyntaxError,
    StrictJSONError,
    loads_strict,
    max_json_depth,
)

__all__ = [
    "TOP_LEVEL",
    "JSONSyntaxError",
    "StrictJSONError",
    "StrictJSONParser",
    "loads_strict",
    "max_json_depth",
]


class StrictJSONParser(JSONParser):
    """DRF's JSON parser within the limits of :func:`loads_strict`: 413 or 400, never 500."""

    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        # Not at the top: console.api.exceptions imports DRF's views, whose settings import
        # this module (DEFAULT_PARSER_CLASSES).
        from console.api.exceptions import RequestTooLarge

        limit: int | None = settings.DATA_UPLOAD_MAX_MEMORY_SIZE  # None: no limit
        raw = stream.read(limit + 1) if limit is not None else stream.read()
        if limit is not None and len(raw) > limit:
            raise RequestTooLarge(f"The body is over the limit of {limit} bytes.")
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = raw.decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise ParseError(f"JSON parse error - the body is not {encoding}: {exc}") from None
        try:
            return loads_strict(text)
        except StrictJSONError as exc:
            raise ParseError(str(exc)) from None
