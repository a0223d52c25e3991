"""Filter events by a pattern, and a pattern's predicate as a Column: the native form
(:mod:`pipelines.patterns.native_sql`) when the session has Sluice's functions, else the
built-in one (:mod:`pipelines.patterns.builtin_sql`), quick predicate first.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import native
from pipelines.patterns.builtin_sql import pattern_sql, quick_pattern_sql, variant_child
from pipelines.patterns.native_sql import native_pattern_sql
from pipelines.patterns.steps import ChildAccessor
from pipelines.plan import computed_once
from pipelines.spec.patterns import compile_pattern

_EVENT_VARIANT = "__sluice_event"
_QUICK = "__sluice_quick_match"
_ICU_CASE_MAPPINGS = "spark.sql.icu.caseMappings.enabled"


def filter_events(df: DataFrame, pattern: Any, *, native_reads: bool | None = None) -> DataFrame:
    """Return the rows of ``df`` whose string column ``event`` holds JSON matching ``pattern``.

    ``event`` is a whole event document (for Sluice events, the CloudEvents JSON form). Rows
    whose ``event`` is NULL, not valid JSON or not a JSON object never match; the columns of
    ``df`` are returned unchanged. Raises ``PatternError`` when the pattern is invalid.
    ``native_reads``: see :func:`filter_by_pattern` (by default, when the session has them).
    """
    root = f"`{_EVENT_VARIANT}`"
    with_root = df.withColumn(_EVENT_VARIANT, F.try_parse_json(F.col("event")))
    native_matching = use_native_matching(df.sparkSession, native_reads)
    if native_matching:
        is_object = F.expr(f"coalesce({native.kind(root)} = 'OBJECT', false)")
        child = partial(native.field, root)
    else:
        is_object = F.expr(f"try_variant_get({root}, '$', 'struct<>') IS NOT NULL")
        child = partial(variant_child, root)
    matched = filter_by_pattern(
        with_root, pattern, child, lambda c: is_object & c, native_reads=native_matching
    )
    return matched.drop(_EVENT_VARIANT)


def filter_by_pattern(
    df: DataFrame,
    pattern: Any,
    child: ChildAccessor,
    condition: Callable[[Column], Column] = lambda matched: matched,
    *,
    native_reads: bool | None = None,
) -> DataFrame:
    """Rows of ``df`` for which ``condition(matched)`` holds, ``matched`` being the never-NULL
    predicate of ``pattern`` (see :func:`pattern_predicate`); the columns are unchanged.
    Raises ``PatternError`` when the pattern is invalid.

    ``condition`` must treat ``matched`` as a boolean (AND, OR, coalesce) and be lambda-free.

    With Sluice's Spark functions (``native_reads`` None: when the session has them, see
    :func:`use_native_matching`; True: required; False: never) the plan is one filter whose
    condition is ``condition`` of :func:`native_pattern_sql`, evaluated in generated code.

    Without them, most rows are still decided in generated code: lambdas (needed for arrays
    only) make Spark interpret the whole operator they are in, so a first filter applies the
    quick, lambda-free form of the predicate (:func:`quick_pattern_sql`, built-in
    expressions), computed once per row; only the rows it keeps or cannot decide reach the
    second, interpreted filter, which evaluates the full predicate for the undecided ones.
    """
    compiled = compile_pattern(pattern)
    if use_native_matching(df.sparkSession, native_reads):
        return df.filter(condition(F.expr(native_pattern_sql(compiled, child))))
    full = F.expr(pattern_sql(compiled, child))
    quick_predicate = quick_pattern_sql(compiled, child)
    if quick_predicate is None:
        return df.filter(condition(full))
    decided = df
    for name, sql in quick_predicate.bindings.items():
        decided = decided.withColumn(name, F.expr(sql))
    quick = F.col(_QUICK)
    decided = decided.withColumn(_QUICK, computed_once(F.expr(quick_predicate.sql)))
    # The partition-id term is non-deterministic (and always true): it keeps the optimizer
    # from merging the two filters into one interpreted filter.
    always = F.spark_partition_id() >= 0
    maybe = decided.filter(condition(F.coalesce(quick, F.lit(True))) & always)
    matched = maybe.filter(condition(F.coalesce(quick, full)))
    return matched.drop(_QUICK, *quick_predicate.bindings)


def use_native_matching(spark: SparkSession, native_reads: bool | None) -> bool:
    """Whether a filter in ``spark`` uses Sluice's ``matches`` (see :func:`filter_by_pattern`
    for ``native_reads``): when the session has Sluice's functions and lower-cases text as
    ``matches`` does, with ICU case mappings (``spark.sql.icu.caseMappings.enabled``, true
    unless changed; a session without them filters with built-in expressions, whose
    ``lower`` then follows that setting). RuntimeError when required and not possible.
    """
    if native_reads is False:
        return False
    if not native.native_functions(spark):
        if native_reads:
            raise RuntimeError("Sluice's Spark functions are not available in this session")
        return False
    # PySpark declares get() -> str | None; with a default given it returns a str.
    icu_case_mappings = spark.conf.get(_ICU_CASE_MAPPINGS, "true")
    if icu_case_mappings is None or icu_case_mappings.strip().lower() != "true":
        if native_reads:
            raise RuntimeError(f"Sluice's pattern matcher needs {_ICU_CASE_MAPPINGS}=true")
        return False
    return True


def pattern_predicate(
    pattern: Any, child: ChildAccessor, *, native_matching: bool = False
) -> Column:
    """Compile ``pattern`` into a never-NULL boolean Column.

    ``child(key)`` returns SQL for the VARIANT value of the event's top-level field ``key``
    (NULL when absent), so events may be one VARIANT column or typed columns.
    ``native_matching``: the small form of :func:`native_pattern_sql` (the session must
    have Sluice's functions, :func:`use_native_matching`); by default built-in expressions
    only (:func:`pattern_sql`, with lambdas: Spark interprets the operator holding it).
    Raises ``PatternError`` when the pattern is invalid.
    """
    compiled = compile_pattern(pattern)
    if native_matching:
        return F.expr(native_pattern_sql(compiled, child))
    return F.expr(pattern_sql(compiled, child))
