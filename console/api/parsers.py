"""Request body parsers: JSON that every database can store, or a 400."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


def unstorable_path(value: Any, path: str = "") -> str | None:
    """The path of the first string (or key) PostgreSQL cannot store, else ``None``.

    PostgreSQL refuses NUL (``\\u0000``) in text and ``jsonb``, and a lone UTF-16 surrogate
    (``\\ud800``, which JSON escapes allow) cannot be encoded to UTF-8 at all.
    """
    if isinstance(value, str):
        return path if not _storable_text(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if not _storable_text(key):
                return path or "(top-level key)"
            found = unstorable_path(item, where)
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = unstorable_path(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def _storable_text(text: str) -> bool:
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class StrictJSONParser(JSONParser):
    """DRF's JSON parser, refusing strings the database cannot store with 400, not 500."""

    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        data = super().parse(stream, media_type, parser_context)
        path = unstorable_path(data)
        if path is not None:
            where = f" (at {path})" if path else ""
            raise ParseError(
                f"JSON parse error - strings may not contain NUL (\\u0000) or unpaired "
                f"surrogates (\\ud800-\\udfff){where}."
            )
        return data
