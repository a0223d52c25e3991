"""The save-time check of a ``sql`` transform expression (sqlglot, no pyspark).

An expression is parsed with sqlglot's Databricks dialect (it reads Spark 4's VARIANT paths
``data:items[0].sku::string`` and raw strings ``r'...'``) and its syntax tree is held to
allow-lists, never to a keyword list:

* one expression: no ``;``, no comments, no ``${...}`` (Spark substitutes variables, even
  ``${env:NAME}``, into the text before parsing it);
* every function call names a function of :data:`~pipelines.spec.sql_functions.ALLOWED_FUNCTIONS`
  by its plain name; a bare word Spark reads as a function (``current_user``) is judged as one;
* every node is one of a fixed set of expression forms, so sub-queries, table references,
  window and aggregate clauses, parameters, ``IDENTIFIER(...)`` and ``*`` are refused;
* every column reference starts at an event column
  (:data:`~pipelines.spec.sql_functions.EVENT_COLUMNS`) or at a variable bound by an
  enclosing lambda.

The driver checks the same text again with Spark's own parser before it runs
(``pipelines.sql_guard``); that check is the authoritative one, this one gives the editor a
field error at once. Only validating a ``sql`` config imports this module (and sqlglot).

sqlglot turns many Spark names into typed nodes (``nvl`` becomes ``Coalesce``). The parser used
here only knows the allowed names: any other name, whatever sqlglot knows about it, stays an
``Anonymous`` call and is refused by name; a typed node must be of a class that one of the
allowed names produces, or of the syntax forms listed in :data:`_SYNTAX_NODES`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from functools import cache
from typing import ClassVar

from sqlglot import exp
from sqlglot.dialects.databricks import Databricks
from sqlglot.errors import ErrorLevel, ParseError, TokenError
from sqlglot.parsers.databricks import DatabricksParser
from sqlglot.tokenizer_core import Token, TokenType

from pipelines.spec.sql_functions import (
    AGGREGATE_REFUSAL,
    ALLOWED_FUNCTIONS,
    IDENTIFIER_REFUSAL,
    PARAMETER_REFUSAL,
    SIZE_CAPPED,
    STAR_REFUSAL,
    SUBQUERY_REFUSAL,
    SYNTAX_FUNCTIONS,
    WINDOW_REFUSAL,
    Argument,
    check_reference,
    check_sizes,
    check_text,
    is_allowed_function,
    refusal,
)

_NAME_THE_RESULT = "name the result: end the expression with AS <name> (or use a bare column)"

_SYNTAX_NODES: tuple[type[exp.Expr], ...] = (
    exp.Literal,
    exp.RawString,
    exp.HexString,
    exp.Boolean,
    exp.Null,
    exp.Paren,
    exp.Tuple,
    exp.Neg,
    exp.Not,
    exp.BitwiseNot,
    exp.And,
    exp.Or,
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.IntDiv,
    exp.Mod,
    exp.DPipe,
    exp.EQ,
    exp.NEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
    exp.NullSafeEQ,
    exp.NullSafeNEQ,
    exp.Is,
    exp.In,
    exp.Between,
    exp.Like,
    exp.ILike,
    exp.Any,  # LIKE ANY ('a%', 'b%'); a sub-query below it is refused on its own
    exp.All,
    exp.RegexpLike,
    exp.Escape,
    exp.BitwiseAnd,
    exp.BitwiseOr,
    exp.BitwiseXor,
    exp.BitwiseLeftShift,
    exp.BitwiseRightShift,
    exp.Bracket,
    exp.JSONExtract,
    exp.Cast,
    exp.TryCast,
    exp.Case,
    exp.If,
    exp.Interval,
    exp.Collate,
    exp.DataType,
    exp.DataTypeParam,
    exp.ColumnConstraint,
    exp.NotNullColumnConstraint,
    exp.CommentColumnConstraint,
)
"""Operators, literals, types and call-shaped syntax (``CASE``, ``CAST``, ``a:b``)."""

_LEAVES: tuple[type[exp.Expr], ...] = (exp.JSONPath, exp.Var)
"""Nodes whose subtree holds path steps or units as plain text: not walked."""

_NOT_DERIVED = (exp.Anonymous, exp.Column, exp.Identifier, exp.Alias, exp.Dot, exp.Lambda)
"""Nodes always judged on their own, whoever made them."""

_REFUSED: tuple[tuple[tuple[type[exp.Expr], ...], str], ...] = (
    ((exp.Query, exp.Subquery, exp.Table, exp.From, exp.Unnest), SUBQUERY_REFUSAL),
    ((exp.Window,), WINDOW_REFUSAL),
    (
        (exp.Filter, exp.WithinGroup, exp.Distinct, exp.IgnoreNulls, exp.RespectNulls),
        AGGREGATE_REFUSAL,
    ),
    ((exp.Placeholder, exp.Parameter, exp.SessionParameter), PARAMETER_REFUSAL),
    ((exp.Star,), STAR_REFUSAL),
)


class _SparkExpressions(Databricks):
    """Databricks' dialect whose parser knows only the allowed function names."""

    class Parser(DatabricksParser):  # Databricks.Parser, named by its class
        FUNCTIONS = {
            name: build
            for name, build in Databricks.Parser.FUNCTIONS.items()
            if is_allowed_function(name)
        }
        FUNCTION_PARSERS = {
            name: parse
            for name, parse in Databricks.Parser.FUNCTION_PARSERS.items()
            if is_allowed_function(name)
        }
        # Bare words are columns here; the walk judges Spark's literal functions by name.
        NO_PAREN_FUNCTIONS: ClassVar[dict[TokenType, type[exp.Expression]]] = {}
        NO_PAREN_FUNCTION_PARSERS = {
            name: parse
            for name, parse in Databricks.Parser.NO_PAREN_FUNCTION_PARSERS.items()
            if name in ("CASE", "IF")
        }


_DIALECT = _SparkExpressions()


MAX_DEPTH = 200
"""How deep an expression's tree may nest: a sum of more than 200 terms, or 200 calls within
calls. Deeper trees exhausted Python's recursion in this check (a 500 at save) and would have
cost Spark's analyzer, in the JVM every channel of the driver shares, as much."""


def check_expression(expression: str) -> str:
    """Return the output name of ``expression`` (``... AS name`` or a bare column), or raise
    ``ValueError`` saying what is not allowed (the first problem found)."""
    tokens = _tokens(expression)
    tree = _parse(expression, tokens)
    depth = _depth(tree)
    if depth > MAX_DEPTH:
        raise ValueError(
            f"the expression nests {depth} levels deep (a chain of operators counts one level "
            f"per term); at most {MAX_DEPTH}: split it over several transforms"
        )
    if isinstance(tree, exp.Alias):
        _check(tree.this, frozenset())
        if tokens[-2].token_type != TokenType.ALIAS:
            raise ValueError(_NAME_THE_RESULT)
        return tree.alias
    _check(tree, frozenset())
    if isinstance(tree, exp.Column) and len(tree.parts) == 1:
        return tree.name
    raise ValueError(_NAME_THE_RESULT)


def _tokens(expression: str) -> list[Token]:
    check_text(expression)
    try:
        tokens = _DIALECT.tokenize(expression)
    except TokenError:
        raise ValueError(
            "cannot read the expression: an unterminated string literal or `name`"
        ) from None
    depth = 0
    for token in tokens:
        if token.comments:
            raise ValueError("comments are not allowed")
        if token.token_type == TokenType.SEMICOLON:
            raise ValueError("';' is not allowed: write one expression, not statements")
        depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(token.token_type, 0)
        if depth < 0:
            raise ValueError("unbalanced parentheses")
    if depth:
        raise ValueError("unbalanced parentheses")
    if not tokens:
        raise ValueError("write an expression")
    if tokens[-1].token_type == TokenType.ALIAS:  # sqlglot would drop a dangling AS
        raise ValueError(_NAME_THE_RESULT)
    for token, following in itertools.pairwise(tokens):
        if token.text.upper() == "IDENTIFIER" and following.token_type == TokenType.L_PAREN:
            raise ValueError(IDENTIFIER_REFUSAL)
    return tokens


def _parse(expression: str, tokens: list[Token]) -> exp.Expr:
    try:
        trees = _DIALECT.parser(error_level=ErrorLevel.IMMEDIATE).parse(tokens, expression)
    except ParseError as exc:
        error = exc.errors[0] if exc.errors else {}
        near = error.get("highlight") or ""
        description = error.get("description") or str(exc).splitlines()[0]
        raise ValueError(f"not a Spark SQL expression near {near!r}: {description}") from None
    except RecursionError:
        raise ValueError("the expression is nested too deeply") from None
    except Exception as exc:  # sqlglot raises more than SqlglotError on odd input
        detail = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise ValueError(f"not a Spark SQL expression: {detail}") from None
    if len(trees) != 1 or trees[0] is None:
        raise ValueError("write one expression")
    return trees[0]


def _check(node: exp.Expr, bound: frozenset[str]) -> None:
    """Raise ``ValueError`` unless every node under ``node`` is allowed; ``bound`` holds the
    (lower-case) names of the enclosing lambdas' variables."""
    if isinstance(node, _LEAVES):
        return
    if isinstance(node, exp.Column):
        _check_column(node, bound)
        return
    if isinstance(node, exp.Identifier):  # a lambda variable in the lambda's body
        check_reference(node.name, bound, single=True)
        return
    if isinstance(node, exp.Lambda):
        names = {variable.name.lower() for variable in node.expressions}
        _check(node.this, bound | names)
        return
    if isinstance(node, exp.Dot):
        _check_dot(node, bound)
        return
    if isinstance(node, exp.Alias | exp.PropertyEQ | exp.Kwarg):  # struct(a AS x), f(k => v)
        value = node.this if isinstance(node, exp.Alias) else node.expression
        _check(value, bound)
        return
    if isinstance(node, exp.ColumnDef):  # a field of STRUCT<name: type>: its name is no column
        for child in (node.args.get("kind"), *node.args.get("constraints", [])):
            if isinstance(child, exp.Expr):
                _check(child, bound)
        return
    _check_node(node)
    for child in _children(node):
        _check(child, bound)


def _check_node(node: exp.Expr) -> None:
    for classes, message in _REFUSED:
        if isinstance(node, classes):
            raise ValueError(message)
    call = _sized_call(node)
    if call is not None:
        check_sizes(call[0], [_argument(argument) for argument in call[1]])
    if isinstance(node, exp.Anonymous):
        name = node.name
        if not isinstance(node.this, str | exp.Identifier) or not is_allowed_function(name):
            raise ValueError(refusal(name.lower() or node.sql()))
        return
    if isinstance(node, _SYNTAX_NODES) or type(node) in allowed_function_nodes():
        return
    if isinstance(node, exp.Func):
        raise ValueError(refusal(type(node).sql_names()[0].lower()))
    raise ValueError(f"{node.key.upper()} is not allowed in an expression")


def _sized_call(node: exp.Expr) -> tuple[str, list[exp.Expr | None]] | None:
    """A call of a :data:`SIZE_CAPPED` function as Spark names it, with its arguments in
    Spark's order; None for any other node."""
    args = node.args
    if isinstance(node, exp.Anonymous):
        name = node.name.lower()
        return (name, list(node.expressions)) if name in SIZE_CAPPED else None
    if isinstance(node, exp.Repeat):
        return "repeat", [args.get("this"), args.get("times")]
    if isinstance(node, exp.Space):
        return "space", [args.get("this")]
    if isinstance(node, exp.Pad):
        name = "lpad" if args.get("is_left") else "rpad"
        return name, [args.get("this"), args.get("expression"), args.get("fill_pattern")]
    if isinstance(node, exp.Randstr):
        return "randstr", [args.get("this")]
    if isinstance(node, exp.GenerateSeries):
        steps = [args["step"]] if args.get("step") is not None else []
        return "sequence", [args.get("start"), args.get("end"), *steps]
    if isinstance(node, exp.Format):
        return "format_string", [args.get("this"), *node.expressions]
    if isinstance(node, exp.Round | exp.Ceil | exp.Floor):
        scale = [args["decimals"]] if args.get("decimals") is not None else []
        return type(node).__name__.lower(), [args.get("this"), *scale]
    return None


def _argument(node: exp.Expr | None) -> Argument:
    """What :func:`check_sizes` knows of an argument: an integer or string literal's value."""
    negative = isinstance(node, exp.Neg)
    if negative:
        node = node.this  # type: ignore[union-attr]
    if isinstance(node, exp.Literal):
        if node.is_string and not negative:
            return Argument(node.this)
        if node.is_int:
            return Argument(-int(node.this) if negative else int(node.this))
    return Argument(None)


def _depth(tree: exp.Expr) -> int:
    """The depth of ``tree``, walked without recursion (a deep tree must not exhaust it)."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in _children(node))
    return deepest


def _children(node: exp.Expr) -> Iterator[exp.Expr]:
    for value in node.args.values():
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, exp.Expr):
                yield child


def _check_column(column: exp.Column, bound: frozenset[str]) -> None:
    if isinstance(column.this, exp.Star):
        raise ValueError(STAR_REFUSAL)
    parts = column.parts
    check_reference(parts[0].name, bound, single=len(parts) == 1)


def _check_dot(node: exp.Dot, bound: frozenset[str]) -> None:
    """``struct_value.field`` is allowed; ``a.b.f(...)`` is a qualified function name."""
    if not isinstance(node.expression, exp.Identifier) or isinstance(node.this, exp.Identifier):
        raise ValueError(refusal(_dotted_name(node)))
    _check(node.this, bound)


def _dotted_name(node: exp.Expr) -> str:
    if isinstance(node, exp.Dot):
        return f"{_dotted_name(node.this)}.{_dotted_name(node.expression)}"
    if isinstance(node, exp.Anonymous | exp.Identifier):
        return node.name.lower()
    if isinstance(node, exp.Func):
        return type(node).sql_names()[0].lower()
    return node.sql()


@cache
def allowed_function_nodes() -> frozenset[type[exp.Expr]]:
    """The sqlglot node classes the allowed function names parse to: with 0 to 4 arguments,
    every node a name's builder makes but the columns it was given (``from_utc_timestamp``
    makes an ``AtTimeZone``)."""
    classes: set[type[exp.Expr]] = set()
    for name in sorted(ALLOWED_FUNCTIONS | SYNTAX_FUNCTIONS):
        for arity in range(5):
            arguments = ", ".join(f"a{index}" for index in range(arity))
            try:
                trees = _DIALECT.parse(f"{name}({arguments})", error_level=ErrorLevel.IGNORE)
            except Exception:  # a name that needs other syntax (CAST, TRIM(... FROM ...))
                continue
            for tree in trees:
                if tree is None or isinstance(tree, (*_NOT_DERIVED, exp.Aliases)):
                    continue  # not a call (``in(a)`` reads as a column with aliases)
                classes.update(
                    type(node) for node in tree.walk() if not isinstance(node, _NOT_DERIVED)
                )
    return frozenset(classes)
