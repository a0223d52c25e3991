"""Compile event patterns into native Spark predicates (no Python UDF on the per-event path).

A pattern is first compiled by :mod:`pipelines.spec.patterns` into rules. The semantics are
those of the pure-Python evaluator (aws/event-ruler's array-consistent matching); the
conformance vectors run through every path. Predicates are generated as SQL text and parsed
once with ``F.expr``: building them call by call through py4j is hundreds of times slower.

With Sluice's Spark functions (:mod:`pipelines.native`, the default when the session has
them) a pattern is one small expression (:func:`native_pattern_sql`): an OR over its rules
of an AND over each rule's top-level fields of one ``matches(<field>, '<steps>')`` call,
which decides the steps below that field in Java (``EventPatterns.java``), in generated
code. Spark re-optimizes a streaming query's plan on every micro-batch, so a small
expression tree matters as much as a fast one.

Without them, each rule becomes a Spark SQL boolean expression over VARIANT values
(``try_variant_get``, ``schema_of_variant`` and higher-order array functions).

How a rule is decided, on both paths (equivalent to ``pipelines.spec.patterns.evaluator``):
steps are grouped by their first path segment and evaluated on that child node. A node is
*crushed* into the list of its non-array values (arrays of arrays are flattened up to
:data:`~pipelines.spec.patterns.model.MAX_ARRAY_NESTING` levels). The absence steps that
come before the node's first value step must hold in every element ("no leaf anywhere
below"); the remaining steps must all hold inside one element (in SQL ``exists(elements, e
-> ...)``), which is what keeps matched fields in the same array element.

Generated predicates never evaluate to NULL, so ``NOT`` and ``filter`` behave as booleans.
Literals are emitted so that no setting of ``spark.sql.parser.escapedStringLiterals`` or
``spark.sql.ansi.doubleQuotedIdentifiers`` changes their meaning.
"""

from pipelines.patterns.builtin_sql import (
    QuickPredicate,
    ip_key,
    pattern_sql,
    quick_pattern_sql,
    variant_child,
    wildcard_sql,
)
from pipelines.patterns.filters import (
    filter_by_pattern,
    filter_events,
    pattern_predicate,
    use_native_matching,
)
from pipelines.patterns.native_sql import native_pattern_sql, steps_json
from pipelines.patterns.routes import RoutePlan, route_plans
from pipelines.patterns.steps import ChildAccessor

__all__ = [
    "ChildAccessor",
    "QuickPredicate",
    "RoutePlan",
    "filter_by_pattern",
    "filter_events",
    "ip_key",
    "native_pattern_sql",
    "pattern_predicate",
    "pattern_sql",
    "quick_pattern_sql",
    "route_plans",
    "steps_json",
    "use_native_matching",
    "variant_child",
    "wildcard_sql",
]
