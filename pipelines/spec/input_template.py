"""EventBridge input templates: text with ``<name>`` placeholders (no pyspark).

A template is a *JSON template* when it is valid JSON once every placeholder outside a
string is replaced by a value (``{"id": <id>, "text": "order <id>"}``, ``"<a> and <b>"``);
otherwise it is a *text template* (``Order <id> is ready``). Placeholders are
``<name>`` with ``name`` made of letters, digits, ``_`` and ``-``; other ``<`` characters
are literal text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

PLACEHOLDER = re.compile(r"<([A-Za-z0-9_-]+)>")
INPUT_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True)
class Placeholder:
    """A ``<name>`` in a template; ``in_string`` when it sits inside a JSON string."""

    name: str
    in_string: bool


@dataclass(frozen=True)
class InputTemplate:
    """A parsed template: literal text and placeholders, in order."""

    pieces: tuple[str | Placeholder, ...]
    is_json: bool

    @property
    def names(self) -> set[str]:
        """The placeholder names the template uses."""
        return {piece.name for piece in self.pieces if isinstance(piece, Placeholder)}


def parse_template(template: str) -> InputTemplate:
    """Split ``template`` into literal text and placeholders and decide whether it is JSON."""
    pieces: list[str | Placeholder] = []
    in_string, escaped, position = False, False, 0
    for match in PLACEHOLDER.finditer(template):
        literal = template[position : match.start()]
        in_string, escaped = _scan(literal, in_string, escaped)
        pieces += [literal, Placeholder(match.group(1), in_string)]
        position = match.end()
    pieces.append(template[position:])
    probe = "".join(
        piece if isinstance(piece, str) else ("x" if piece.in_string else "null")
        for piece in pieces
    )
    return InputTemplate(tuple(piece for piece in pieces if piece != ""), _is_json(probe))


def _scan(text: str, in_string: bool, escaped: bool) -> tuple[bool, bool]:
    """The JSON string state after ``text``: inside a string, and after a backslash."""
    for char in text:
        if escaped:
            escaped = False
        elif in_string and char == "\\":
            escaped = True
        elif char == '"':
            in_string = not in_string
    return in_string, escaped


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
