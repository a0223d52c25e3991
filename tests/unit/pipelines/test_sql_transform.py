"""The SQL transform on small event DataFrames."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame
from pyspark.testing import assertDataFrameEqual

from pipelines.spec.configs.sql import SqlConfig
from pipelines.transforms import TRANSFORMS
from pipelines.transforms.sql import compute_data_with_sql
from tests.unit.pipelines.event_rows import data_of, events_frame

pytestmark = pytest.mark.spark


@pytest.fixture
def orders(spark: Any) -> DataFrame:
    return events_frame(
        spark,
        [
            {"data": {"amount": "10", "order": {"id": "o-1"}}, "subject": "s-1"},
            {"data": {"amount": 2.5}, "extensions": {"tenant": "acme"}},
        ],
    )


def test_expressions_become_the_data_object(orders: DataFrame) -> None:
    config = SqlConfig(
        expressions=[
            "data:amount::double * 2 AS double_amount",
            "data:order.id::string AS `order id`",
            "subject",
            "upper(source) AS source",
            "extensions['tenant']::string AS tenant",
            "'a;b' AS literal",
        ]
    )
    result = compute_data_with_sql(orders, config)
    assert data_of(result) == [
        {
            "double_amount": 20.0,
            "order id": "o-1",
            "subject": "s-1",
            "source": "KAFKA://ORDERS",
            "tenant": None,
            "literal": "a;b",
        },
        {
            "double_amount": 5.0,
            "order id": None,
            "subject": None,
            "source": "KAFKA://ORDERS",
            "tenant": "acme",
            "literal": "a;b",
        },
    ]
    assertDataFrameEqual(result.drop("data"), orders.drop("data"))
    assert TRANSFORMS["sql"] is compute_data_with_sql


def test_an_invalid_expression_fails_the_build(orders: DataFrame) -> None:
    with pytest.raises(PySparkException):
        # Allowed by both checks, refused by Spark's analysis: a string has no fields.
        compute_data_with_sql(orders, SqlConfig(expressions=["subject.field AS x"])).collect()
