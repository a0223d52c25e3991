"""SQL transform: Spark SQL expressions over the event columns compute the new ``data``.

Before Spark reads them, the expressions go through :func:`pipelines.sql_guard.check_expressions`
(Spark's own parser, the SQL function allow-list): a refused expression fails the build with
:class:`~pipelines.sql_guard.UnsafeSqlExpression`, whatever the save-time check said. Each
allowed expression is then parsed by ``F.expr``, so a syntax or analysis error fails the build,
not an event. The results form a struct (one field per expression, named by its alias or
column) turned into a VARIANT object with ``to_variant_object``; SQL NULL results become JSON
``null`` members.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipelines.cloudevents import select_event_columns
from pipelines.spec.configs.sql import SqlConfig
from pipelines.sql_guard import check_expressions


def compute_data_with_sql(events: DataFrame, config: SqlConfig) -> DataFrame:
    """Replace ``data`` by ``{name: value, ...}`` of the configured expressions; raise
    :class:`~pipelines.sql_guard.UnsafeSqlExpression` for an expression the allow-list refuses."""
    check_expressions(events.sparkSession, config.expressions)
    results = F.struct(*(F.expr(expression) for expression in config.expressions))
    return select_event_columns(events.withColumn("data", F.to_variant_object(results)))
