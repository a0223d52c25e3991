"""SQL literals built from an editor's text keep their meaning whatever the session's settings:
no ``${...}`` substitution, no escape processing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql import functions as F

from pipelines.sql import sql_string

TEXTS = ["plain", "it's", "back\\slash", "${env:HOME}", "${system:user.name}", "$5 and ${x}"]


@pytest.mark.parametrize("text", TEXTS)
def test_quotes_backslashes_and_dollars_never_reach_the_sql_text(text: str) -> None:
    literal = sql_string(text)
    if text == "plain":
        assert literal == "'plain'"
    else:
        assert literal.startswith("decode(X'") and "$" not in literal


@pytest.fixture
def substituting(spark: Any) -> Iterator[Any]:
    """The session with variable substitution on, as an unhardened session has it."""
    before = spark.conf.get("spark.sql.variable.substitute")
    spark.conf.set("spark.sql.variable.substitute", "true")
    yield spark
    spark.conf.set("spark.sql.variable.substitute", before)


@pytest.mark.spark
def test_a_literal_is_its_text_even_where_spark_substitutes_variables(substituting: Any) -> None:
    row = substituting.range(1).select(*(F.expr(sql_string(t)) for t in TEXTS)).first()
    assert list(row) == TEXTS
    # What the hex literal prevents: the same text quoted plainly is substituted.
    [plain] = substituting.range(1).select(F.expr("'${system:java.version}'")).first()
    assert plain != "${system:java.version}"
