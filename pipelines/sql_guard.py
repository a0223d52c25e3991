"""The driver's side of the SQL allow-list: Spark's own parser, and a hardened session.

:func:`check_with_spark` parses an editor's expression with the session's parser (the one
``F.expr`` uses) and walks the Catalyst tree it returns, holding it to the same allow-lists as
the save-time check (``pipelines.spec.sql_expressions``): every function call names an
allowed function by its plain name, every node is one of :data:`ALLOWED_NODES`, every column
starts at an event column or a lambda variable. It is the authoritative check: whatever sqlglot
made of the text, the driver never runs an expression its own parser reads differently.

:func:`harden_session` narrows what any SQL text can do in the session: no SQL on files, no
``${...}`` substitution, no class loading from schema strings, and no reflection, file or
session functions in its registry.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from pipelines.spec.sql_functions import (
    AGGREGATE_REFUSAL,
    DROPPED_FROM_SESSION,
    IDENTIFIER_REFUSAL,
    PARAMETER_REFUSAL,
    SIZE_CAPPED,
    STAR_REFUSAL,
    SUBQUERY_REFUSAL,
    WINDOW_REFUSAL,
    Argument,
    check_reference,
    check_sizes,
    check_text,
    is_allowed_function,
    refusal,
)

_EXPRESSIONS = "org.apache.spark.sql.catalyst.expressions."
_ANALYSIS = "org.apache.spark.sql.catalyst.analysis."

ALLOWED_NODES = frozenset(
    _EXPRESSIONS + name
    for name in (
        "Literal",
        "Alias",
        "Cast",
        "CaseWhen",
        "In",
        "Not",
        "And",
        "Or",
        "IsNull",
        "IsNotNull",
        "EqualTo",
        "EqualNullSafe",
        "GreaterThan",
        "GreaterThanOrEqual",
        "LessThan",
        "LessThanOrEqual",
        "Add",
        "Subtract",
        "Multiply",
        "Divide",
        "Remainder",
        "IntegralDivide",
        "UnaryMinus",
        "UnaryPositive",
        "BitwiseAnd",
        "BitwiseOr",
        "BitwiseXor",
        "BitwiseNot",
        "ShiftLeft",
        "ShiftRight",
        "ShiftRightUnsigned",
        "Like",
        "ILike",
        "RLike",
        "LikeAny",
        "LikeAll",
        "NotLikeAny",
        "NotLikeAll",
        "Concat",
        "StringTrim",
        "StringTrimLeft",
        "StringTrimRight",
        "StringTrimBoth",
        "Substring",
        "StringLocate",
        "Overlay",
        "TimestampAdd",
        "TimestampDiff",
        "CreateNamedStruct",
        "SemiStructuredExtract",
        "Collate",
        "NamedArgumentExpression",
        "UnresolvedCollation",
    )
) | {_ANALYSIS + "UnresolvedExtractValue"}
"""Catalyst nodes Spark's parser makes for operators, literals and call-shaped syntax
(``CASE``, ``CAST``/``::``, ``TRIM(BOTH ...)``, ``data:a.b``, ``x[0]``, ``COLLATE``); calls,
columns and lambdas are judged on their own."""

_FUNCTION = _ANALYSIS + "UnresolvedFunction"
_ATTRIBUTE = _ANALYSIS + "UnresolvedAttribute"
_LAMBDA = _EXPRESSIONS + "LambdaFunction"
_LAMBDA_VARIABLE = _EXPRESSIONS + "UnresolvedNamedLambdaVariable"

_REFUSED = {
    **dict.fromkeys(
        (
            "ScalarSubquery",
            "Exists",
            "ListQuery",
            "InSubquery",
            "LateralSubquery",
            "FunctionTableSubqueryArgumentExpression",
        ),
        SUBQUERY_REFUSAL,
    ),
    **dict.fromkeys(("WindowExpression", "WindowSpecDefinition"), WINDOW_REFUSAL),
    **dict.fromkeys(("NamedParameter", "PosParameter"), PARAMETER_REFUSAL),
    **dict.fromkeys(("UnresolvedStar", "UnresolvedRegex"), STAR_REFUSAL),
    "SortOrder": AGGREGATE_REFUSAL,
    "ExpressionWithUnresolvedIdentifier": IDENTIFIER_REFUSAL,
}
"""Clear messages for nodes outside the allow-list that an editor is likely to write."""

HARDENED_CONF = {
    "spark.sql.runSQLOnFiles": "false",
    "spark.sql.variable.substitute": "false",
    "spark.sql.udt.allowCreatingUDTFromString": "false",
    "spark.sql.scripting.enabled": "false",
    "spark.sql.parser.manageParserCaches": "true",
    "spark.sql.parser.parserDfaCacheFlushRatio": "10",
}
"""No ``SELECT ... FROM text.`/path```; no ``${env:NAME}`` / ``${system:...}`` substitution in
any SQL text (it happens before parsing, inside string literals too); no loading of a class
named in a JSON schema string (``from_json(x, '{"type":"udt","class":...}')``); no SQL
scripts. Sluice's own SQL needs none of them. And the SQL parser's cache (ANTLR's DFA states,
kept for every text parsed and never bounded by Spark's defaults) is flushed past 10 % of the
driver's memory: the long expressions of one channel (a pattern's built-in SQL, an editor's
SQL) must not fill a heap its neighbours share."""


class UnsafeSqlExpression(ValueError):
    """An expression of a ``sql`` transform that Spark's parser reads as something the
    allow-list refuses; the channel does not build."""


def check_expressions(spark: SparkSession, expressions: Iterable[str]) -> None:
    """Raise :class:`UnsafeSqlExpression` for the first expression :func:`check_with_spark`
    refuses."""
    for expression in expressions:
        check_with_spark(spark, expression)


def check_with_spark(spark: SparkSession, expression: str) -> None:
    """Parse ``expression`` with ``spark``'s SQL parser and raise
    :class:`UnsafeSqlExpression` unless every node of its tree is allowed."""
    try:
        check_text(expression)
        tree = _parser(spark).parseExpression(expression)
    except ValueError as exc:
        raise UnsafeSqlExpression(f"sql expression {expression!r}: {exc}") from None
    except (PySparkException, Py4JJavaError) as exc:  # Spark's ParseException
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UnsafeSqlExpression(
            f"sql expression {expression!r} is not a Spark SQL expression: {detail}"
        ) from None
    try:
        _check(tree, frozenset())
    except ValueError as exc:
        raise UnsafeSqlExpression(f"sql expression {expression!r}: {exc}") from None


def harden_session(spark: SparkSession) -> None:
    """Apply :data:`HARDENED_CONF` to ``spark`` and drop the functions of
    :data:`~pipelines.spec.sql_functions.DROPPED_FROM_SESSION` from its function registry.

    Idempotent. Sessions cloned from ``spark`` afterwards (each streaming query runs in one)
    keep both; a ``newSession()`` starts from Spark's defaults and needs its own call.
    """
    for key, value in HARDENED_CONF.items():
        spark.conf.set(key, value)
    registry = spark._jsparkSession.sessionState().functionRegistry()
    dropped = set(DROPPED_FROM_SESSION)
    for identifier in _java_list(registry.listFunction()):
        if identifier.funcName().lower() in dropped:
            registry.dropFunction(identifier)


def _parser(spark: SparkSession) -> Any:
    return spark._jsparkSession.sessionState().sqlParser()


def _check(node: Any, bound: frozenset[str]) -> None:
    """Raise ``ValueError`` unless every node under the Catalyst expression ``node`` is
    allowed; ``bound`` holds the lower-case names of the enclosing lambdas' variables."""
    kind = node.getClass().getName()
    if kind == _FUNCTION:
        _check_function(node)
    elif kind == _ATTRIBUTE:
        parts = _seq(node.nameParts())
        check_reference(parts[0], bound, single=len(parts) == 1)
        return
    elif kind == _LAMBDA_VARIABLE:
        check_reference(_seq(node.nameParts())[0], bound, single=False)
        return
    elif kind == _LAMBDA:
        names = {_seq(variable.nameParts())[0].lower() for variable in _seq(node.arguments())}
        _check(node.function(), bound | names)
        return
    elif kind not in ALLOWED_NODES:
        simple = kind.rsplit(".", 1)[-1].split("$")[0]
        raise ValueError(_REFUSED.get(simple, f"{simple} is not allowed in an expression"))
    for child in _seq(node.children()):
        _check(child, bound)


def _check_function(node: Any) -> None:
    parts = _seq(node.nameParts())
    name = ".".join(parts).lower()
    if len(parts) != 1 or not is_allowed_function(parts[0]) or node.isInternal():
        raise ValueError(refusal(name))
    if node.isDistinct() or node.filter().isDefined() or node.orderingWithinGroup().nonEmpty():
        raise ValueError(AGGREGATE_REFUSAL)
    if name in SIZE_CAPPED:
        check_sizes(name, [_argument(argument) for argument in _seq(node.arguments())])


def _argument(node: Any) -> Argument:
    """What :func:`check_sizes` knows of a Catalyst argument: an integer or string literal's
    value (``-3`` is a minus applied to a literal)."""
    negative = node.getClass().getName() == _EXPRESSIONS + "UnaryMinus"
    if negative:
        node = node.child()
    if node.getClass().getName() != _EXPRESSIONS + "Literal" or node.value() is None:
        return Argument(None)
    kind = node.dataType().typeName()
    if kind in ("integer", "long", "short", "byte"):
        value = int(node.value())
        return Argument(-value if negative else value)
    if kind == "string" and not negative:
        return Argument(str(node.value().toString()))
    return Argument(None)


def _seq(values: Any) -> list[Any]:
    """A Scala ``Seq`` as a Python list."""
    return [values.apply(index) for index in range(values.size())]


def _java_list(values: Any) -> Iterator[Any]:
    iterator = values.iterator()
    while iterator.hasNext():
        yield iterator.next()
