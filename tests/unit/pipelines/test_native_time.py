"""Sluice's ``time`` function (spark/src/main/java/io/sluice/spark/TimeText.java) against the
built-in SQL it replaces (``pipelines.cloudevents.time_text_sql``): the same text, exactly."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines import native
from pipelines.cloudevents import time_text_sql

pytestmark = pytest.mark.spark

EDGES = [
    0, 1, -1, 999, 1_000, 1_001, 999_999, 1_000_000, -1_000_000, -999_999, 120_000,
    951_782_400_000_000,  # 2000-02-29 (a leap day of a year divisible by 400)
    4_107_542_400_000_000,  # 2100-03-01 (2100 has no 29 February)
    -62_135_596_800_000_000,  # 0001-01-01T00:00:00Z, the first day Spark keeps
    253_402_300_799_999_999,  # 9999-12-31T23:59:59.999999Z, the last
    253_402_300_800_000_000,  # 10000-01-01: past the range, written by Spark's formatter
    -62_135_596_800_000_001,  # just before year 1
    -12_219_292_800_000_000,  # 1582-10-15, the Gregorian switch (proleptic all along)
]  # fmt: skip


@pytest.fixture
def utc(spark: SparkSession) -> Iterator[SparkSession]:
    """The session in UTC while the test runs: the built-in text goes through the session
    zone's wall clock, which skips an hour a year where there is summer time."""
    key = "spark.sql.session.timeZone"
    before = spark.conf.get(key)
    spark.conf.set(key, "UTC")
    yield spark
    spark.conf.set(key, before)


def test_time_text_is_the_built_in_text(utc: SparkSession) -> None:
    spark = utc
    assert native.native_functions(spark)
    rnd = random.Random(11)
    micros = EDGES + [
        rnd.randint(-62_135_596_800_000_000, 253_402_300_799_999_999) for _ in range(3000)
    ]
    fractions = [0, 1, 7_000, 123_456]
    micros += [rnd.randint(0, 2 * 10**9) * 10**6 + rnd.choice(fractions) for _ in range(500)]
    frame = spark.createDataFrame([(m,) for m in micros], "m long").select(
        F.timestamp_micros("m").alias("t")
    )
    compared = frame.select(
        F.col("t"),
        F.expr(time_text_sql("t")).alias("built_in"),
        F.expr(native.time_text("t")).alias("native"),
    )
    differing = compared.filter(~F.col("built_in").eqNullSafe(F.col("native"))).limit(5).collect()
    assert differing == []
    assert compared.count() == len(micros)


def test_time_text_of_null_is_null(spark: SparkSession) -> None:
    row = spark.sql(f"SELECT {native.time_text('CAST(NULL AS TIMESTAMP)')} AS t").first()
    assert row.t is None


def test_time_text_examples(spark: SparkSession) -> None:
    rows = spark.sql(
        "SELECT "
        + ", ".join(
            f"{native.time_text(f'TIMESTAMP_MICROS({m})')} AS t{i}"
            for i, m in enumerate([1_717_229_730_120_000, 1_717_229_730_000_000, 1])
        )
    ).first()
    assert list(rows) == [
        "2024-06-01T08:15:30.120Z",
        "2024-06-01T08:15:30Z",
        "1970-01-01T00:00:00.000001Z",
    ]
