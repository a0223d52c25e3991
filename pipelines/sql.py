"""Helpers to write Spark SQL text safely (literals whose meaning no parser setting changes).

Stages generate SQL text and parse it once with ``F.expr`` where an expression is large
(higher-order functions): building it call by call through py4j is orders of magnitude slower.
"""

from __future__ import annotations

import re

BACKSLASH = "\\"
# No quote, backslash or "$": Spark substitutes ${...} in SQL text before it parses it
# (spark.sql.variable.substitute), even inside a string literal.
_SAFE_LITERAL = re.compile(r"[^'\\$]*")


def sql_string(text: str) -> str:
    """A SQL string literal for ``text``.

    Plain quoting when ``text`` holds no quote, backslash or ``$``, else a hex literal
    decoded as UTF-8, so neither ``spark.sql.parser.escapedStringLiterals``,
    ``spark.sql.ansi.doubleQuotedIdentifiers`` nor variable substitution (``${env:…}``) can
    change its meaning. Both forms are constant (foldable) expressions.
    """
    if _SAFE_LITERAL.fullmatch(text):
        return f"'{text}'"
    return f"decode(X'{text.encode('utf-8').hex()}', 'UTF-8')"


def sql_double(number: float) -> str:
    """A SQL DOUBLE literal (exact: Python's repr round-trips)."""
    return f"CAST('{number!r}' AS DOUBLE)"


def sql_column(name: str) -> str:
    """A quoted column reference."""
    return "`" + name.replace("`", "``") + "`"
