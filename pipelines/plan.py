"""Query-plan helpers: shaping expressions so Spark's optimizer evaluates them once."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F


def computed_once(column: Column) -> Column:
    """``column``, evaluated once per row however often later stages refer to it.

    Spark's optimizer substitutes a projected expression into every filter that refers to
    it (predicate pushdown through a projection) and into later projections. For a cheap
    expression that is right; for parsing a JSON document it parses the same value once per
    reference: the event pattern filter alone refers to ``data`` once per field it tests
    (6 parses per record were measured in the Kafka → filter → Kafka plan). Rules never
    move or duplicate a non-deterministic expression, so the column is guarded by an
    always-true condition on ``spark_partition_id()``, which is non-deterministic to the
    optimizer and costs nothing per row.
    """
    return F.when(F.spark_partition_id() >= 0, column)
