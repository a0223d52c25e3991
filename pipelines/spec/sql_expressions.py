"""A cheap syntactic check of user Spark SQL *expressions* (no pyspark, no parsing).

It guarantees an expression cannot be a statement or smuggle one in: no ``;`` and no
comments outside literals, quotes and parentheses balanced, and none of the statement
keywords in :data:`FORBIDDEN_KEYWORDS` as a whole word outside string literals and
back-quoted identifiers (so no sub-query either). Spark parses the expression when the
query is built (``F.expr``); that reports every other mistake.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FORBIDDEN_KEYWORDS = frozenset(
    {"SELECT", "INSERT", "DROP", "CREATE", "DELETE", "UPDATE", "MERGE", "ALTER", "TRUNCATE"}
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Token:
    """A word, a back-quoted identifier (``quoted``), a string literal (as ``''``) or one
    other character, at ``depth`` parentheses."""

    text: str
    quoted: bool
    depth: int


def check_expression(expression: str) -> str:
    """Return the output name of ``expression`` (``... AS name`` or a bare column name), or
    raise ``ValueError`` saying what is wrong."""
    tokens = tokenize(expression)
    for token in tokens:
        if not token.quoted and token.text.upper() in FORBIDDEN_KEYWORDS:
            raise ValueError(f"{token.text.upper()} is not allowed: write an expression only")
    significant = [token for token in tokens if token.text.strip()]
    if len(significant) == 1 and _is_name(significant[0]):
        return significant[0].text
    if (
        len(significant) >= 3
        and significant[-2].text.upper() == "AS"
        and not significant[-2].quoted
        and significant[-2].depth == 0
        and _is_name(significant[-1])
    ):
        return significant[-1].text
    raise ValueError("name the result: end the expression with AS <name> (or use a bare column)")


def tokenize(expression: str) -> list[Token]:
    """Tokens of ``expression``; raise ``ValueError`` for ``;``, comments, an unterminated
    literal or identifier, or unbalanced parentheses."""
    tokens: list[Token] = []
    depth, position = 0, 0
    while position < len(expression):
        char = expression[position]
        if char in "'\"":
            position = _end_of_literal(expression, position)
            tokens.append(Token(char * 2, False, depth))  # the literal, its text left out
            continue
        if char == "`":
            name, position = _quoted_identifier(expression, position)
            tokens.append(Token(name, True, depth))
            continue
        word = _WORD.match(expression, position)
        if word:
            tokens.append(Token(word.group(), False, depth))
            position = word.end()
            continue
        _check_character(expression, position)
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            raise ValueError("unbalanced parentheses")
        tokens.append(Token(char, False, depth))
        position += 1
    if depth:
        raise ValueError("unbalanced parentheses")
    return tokens


def _check_character(expression: str, position: int) -> None:
    if expression[position] == ";":
        raise ValueError("';' is not allowed: write one expression, not statements")
    if expression.startswith(("--", "/*"), position):
        raise ValueError("comments are not allowed")


def _end_of_literal(expression: str, start: int) -> int:
    quote, position = expression[start], start + 1
    while position < len(expression):
        char = expression[position]
        if char == "\\":
            position += 2
        elif char == quote:
            return position + 1
        else:
            position += 1
    raise ValueError(f"unterminated string literal starting at character {start}")


def _quoted_identifier(expression: str, start: int) -> tuple[str, int]:
    name, position = "", start + 1
    while position < len(expression):
        if expression.startswith("``", position):
            name, position = name + "`", position + 2
        elif expression[position] == "`":
            return name, position + 1
        else:
            name, position = name + expression[position], position + 1
    raise ValueError(f"unterminated `identifier` starting at character {start}")


def _is_name(token: Token) -> bool:
    return token.quoted or (_WORD.fullmatch(token.text) is not None and token.depth == 0)
