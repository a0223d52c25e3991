"""Sluice's Spark functions (spark/src/main/java, pipelines.native) against the built-in
functions they replace: every result must be the built-in one, exactly."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import native

pytestmark = pytest.mark.spark

CHARS = [chr(c) for c in range(0x80)] + ["é", "€", "𝄞", "\u2028", "日本", "\ufeff"]


def random_text(rnd: random.Random) -> str:
    return "".join(rnd.choice(CHARS) for _ in range(rnd.randint(0, 12)))


def random_value(rnd: random.Random, depth: int = 0) -> Any:
    roll = rnd.random()
    if depth > 3 or roll < 0.5:
        return rnd.choice(
            [
                random_text(rnd),
                "x" * rnd.randint(60, 300),  # long strings: a different VARIANT encoding
                rnd.randint(-(10**20), 10**20),
                rnd.randint(-300, 300),
                rnd.uniform(-1e6, 1e6),
                1.10, 0.0, -0.0, 1e300, 1.5e-7, 100.00, 12345678901234567890.5,
                True, False, None,
            ]
        )  # fmt: skip
    if roll < 0.75:
        return {random_text(rnd): random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 5))}
    return [random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]


EDGE_DOCUMENTS = [
    '{"a":1} xyz',  # what follows the first value is ignored, by both
    '{"a":1,"a":2}',  # duplicate keys: refused unless allowed
    "nope",
    "",
    " ",
    "1e400",
    '"\\ud800"',  # a lone surrogate: refused when unicode is validated
    "\ufeff{}",
    "\x00{}",
    json.dumps({f"k{i:03}": i for i in range(300)}),  # more fields than a linear search
    json.dumps({"nested": {"deeper": {"deepest": [1, {"k": "v"}]}}}),
    "123456789012345678901234567890123456789",
    "-0",
    "1E2",
    "0.1e1",
    '{"é":"ü","\\"q":"\\\\"}',
    "[" * 400 + "]" * 400,
]


@pytest.fixture(scope="module")
def documents(spark: SparkSession) -> DataFrame:
    assert native.native_functions(spark), "the test session has Sluice's jar"
    rnd = random.Random(20261121)
    texts = [json.dumps(random_value(rnd)) for _ in range(2000)] + EDGE_DOCUMENTS
    frame = spark.createDataFrame(list(enumerate(texts)), "i int, t string").cache()
    frame.count()
    return frame


@pytest.mark.parametrize("allow_duplicates", [False, True])
@pytest.mark.parametrize("validate_unicode", [True, False])
def test_parse_is_try_parse_json(
    spark: SparkSession, documents: DataFrame, allow_duplicates: bool, validate_unicode: bool
) -> None:
    settings = {
        "spark.sql.variant.allowDuplicateKeys": str(allow_duplicates).lower(),
        "spark.sql.variant.validateUnicodeInJsonParsing": str(validate_unicode).lower(),
    }
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        rows = documents.select(
            "t",
            F.to_json(F.try_parse_json("t")).alias("spark"),
            F.to_json(native.try_parse_json(documents, "t")).alias("sluice"),
        ).collect()
    finally:
        for key in settings:
            spark.conf.unset(key)
    assert [(r.t, r.sluice) for r in rows] == [(r.t, r.spark) for r in rows]
    assert sum(r.spark is None for r in rows) >= 5  # the invalid ones are among them


def test_json_is_to_json(spark: SparkSession, documents: DataFrame) -> None:
    parsed = documents.withColumn("v", F.try_parse_json("t"))
    rows = parsed.select(
        "t", F.to_json("v").alias("spark"), native.to_json(parsed, "v").alias("sluice")
    ).collect()
    assert [(r.t, r.sluice) for r in rows] == [(r.t, r.spark) for r in rows]


def test_json_writes_values_json_has_no_literal_for_as_spark_does(spark: SparkSession) -> None:
    """Dates, timestamps, floats, binary values and non-finite doubles (a VARIANT built in
    SQL may hold them) go to Spark's writer, with the session time zone."""
    values = spark.sql(
        "SELECT to_variant_object(named_struct("
        "'d', DATE '2024-02-29', 't', TIMESTAMP '2024-06-01 08:15:30.5', "
        "'n', CAST(TIMESTAMP '2024-06-01 08:15:30' AS TIMESTAMP_NTZ), 'f', CAST(1.5 AS FLOAT), "
        "'b', X'00FF', 'inf', CAST('Infinity' AS DOUBLE), 's', 'x')) AS v "
        "UNION ALL SELECT CAST(CAST('NaN' AS DOUBLE) AS VARIANT)"
    )
    for zone in ("UTC", "America/New_York"):
        spark.conf.set("spark.sql.session.timeZone", zone)
        try:
            rows = values.select(
                F.to_json("v").alias("spark"), native.to_json(values, "v").alias("sluice")
            ).collect()
        finally:
            spark.conf.unset("spark.sql.session.timeZone")
        assert [r.sluice for r in rows] == [r.spark for r in rows]


def test_envelope_escapes_strings_as_spark_writes_them(
    spark: SparkSession, documents: DataFrame
) -> None:
    """Every text as an attribute (``id``) of an envelope without data, and with a member
    left out (NULL), against Spark's JSON writer."""
    members = {name: "CAST(NULL AS STRING)" for name in native.ENVELOPE_MEMBERS}
    members["id"], members["type"] = "t", "'x'"
    rows = documents.select(
        F.to_json(F.struct(F.col("t").alias("id"), F.lit("x").alias("type"))).alias("spark"),
        F.expr(native.envelope("CAST(NULL AS VARIANT)", "UTC", members)).alias("sluice"),
    ).collect()
    assert [r.sluice for r in rows] == [r.spark for r in rows]


def test_kind_is_the_first_word_of_schema_of_variant(spark: SparkSession) -> None:
    values = spark.sql(
        "SELECT parse_json(j) AS v FROM VALUES ('1'), ('300'), ('5000000000'), ('1.5'), "
        "('1e300'), ('12345678901234567890123'), ('true'), ('false'), ('null'), ('\"x\"'), "
        "('\"' || repeat('y', 100) || '\"'), ('{\"a\":1}'), ('[1]'), ('{}'), ('[]') AS t(j) "
        "UNION ALL SELECT CAST(DATE '2024-01-01' AS VARIANT) "
        "UNION ALL SELECT CAST(TIMESTAMP '2024-01-01 00:00:00' AS VARIANT) "
        "UNION ALL SELECT CAST(CAST(TIMESTAMP '2024-01-01 00:00:00' AS TIMESTAMP_NTZ) AS VARIANT) "
        "UNION ALL SELECT CAST(CAST(1.5 AS FLOAT) AS VARIANT) "
        "UNION ALL SELECT CAST(X'01' AS VARIANT) UNION ALL SELECT CAST(NULL AS VARIANT)"
    )
    rows = values.select(
        F.expr("regexp_extract(schema_of_variant(v), '^[A-Z_]+', 0)").alias("spark"),
        F.expr(native.kind("v")).alias("sluice"),
    ).collect()
    assert len(rows) == 21
    for r in rows:
        assert r.sluice == (r.spark or None)


def test_field_text_and_number_read_what_variant_get_reads(
    spark: SparkSession, documents: DataFrame
) -> None:
    """For every member of every object document (and a few absent ones): the member, its
    text when it is a string, its number when it is one (NaN otherwise)."""
    parsed = documents.withColumn("v", F.try_parse_json("t")).filter(
        F.expr("schema_of_variant(v) LIKE 'OBJECT%'")
    )
    keys = parsed.select(
        "i", "v", F.explode(F.array_union(F.json_object_keys("t"), F.array(F.lit("absent"))))
    ).withColumnRenamed("col", "k")
    member = f"{native.PREFIX}field(v, k)"
    rows = keys.select(
        "i",
        "k",
        F.expr("to_json(try_element_at(try_variant_get(v, '$', 'map<string,variant>'), k))").alias(
            "spark_member"
        ),
        F.expr(f"to_json({member})").alias("sluice_member"),
        F.expr(
            "CASE WHEN schema_of_variant(try_element_at(try_variant_get(v, '$', "
            "'map<string,variant>'), k)) = 'STRING' THEN try_variant_get(try_element_at("
            "try_variant_get(v, '$', 'map<string,variant>'), k), '$', 'string') END"
        ).alias("spark_text"),
        F.expr(native.text(member)).alias("sluice_text"),
        F.expr(
            "CASE WHEN regexp_like(schema_of_variant(try_element_at(try_variant_get(v, '$', "
            "'map<string,variant>'), k)), '^(TINYINT|SMALLINT|INT|BIGINT|FLOAT|DOUBLE|DECIMAL)') "
            "THEN try_variant_get(try_element_at(try_variant_get(v, '$', "
            "'map<string,variant>'), k), '$', 'double') ELSE double('NaN') END"
        ).alias("spark_number"),
        F.expr(native.number(member)).alias("sluice_number"),
    ).collect()
    assert len(rows) > 1000
    for r in rows:
        assert r.sluice_member == r.spark_member, (r.i, r.k)
        assert r.sluice_text == r.spark_text, (r.i, r.k)
        same_number = r.sluice_number == r.spark_number or (
            r.sluice_number != r.sluice_number and r.spark_number != r.spark_number  # NaN
        )
        assert same_number, (r.i, r.k, r.sluice_number, r.spark_number)
    assert any(r.sluice_text for r in rows) and any(r.sluice_number == 0 for r in rows)


def test_they_are_registered_once_per_session(spark: SparkSession) -> None:
    assert native.native_functions(spark)
    assert spark.conf.get(f"spark.sql.catalog.{native.CATALOG}") == native.CATALOG_CLASS


def test_they_can_be_turned_off(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.DISABLE_ENV, "false")
    assert not native.native_functions(spark)
    frame = spark.createDataFrame([('{"a":1}',)], "t string")
    assert "sluice_fn" not in str(native.try_parse_json(frame, "t"))


def test_a_session_without_the_jar_uses_built_in_functions(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Registration probes the catalog: a class that is not on the class path (a user's own
    session without Sluice's jar) leaves the session as it was, and built-ins are used."""
    monkeypatch.setattr(native, "CATALOG", "sluice_missing")
    monkeypatch.setattr(native, "CATALOG_CLASS", "io.sluice.spark.NotThere")
    monkeypatch.setattr(native, "PREFIX", "sluice_missing.variant.")
    assert native._register(spark) is False
    assert spark.conf.get("spark.sql.catalog.sluice_missing", None) is None


def test_a_catalog_of_the_same_name_is_left_alone(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(native, "CATALOG", "sluice_taken")
    spark.conf.set("spark.sql.catalog.sluice_taken", "com.example.Catalog")
    try:
        assert native._register(spark) is False
        assert spark.conf.get("spark.sql.catalog.sluice_taken") == "com.example.Catalog"
    finally:
        spark.conf.unset("spark.sql.catalog.sluice_taken")


def parsed_both_ways(spark: SparkSession, documents: list[bytes]) -> list[Any]:
    """Each byte string as a STRING column, parsed by Spark and by Sluice: (spark, sluice)."""
    frame = spark.createDataFrame([(d.hex(),) for d in documents], "h string").withColumn(
        "t", F.unhex("h").cast("string")
    )
    return frame.select(
        F.to_json(F.try_parse_json("t")).alias("spark"),
        F.to_json(native.try_parse_json(frame, "t")).alias("sluice"),
    ).collect()


def test_parse_reads_malformed_utf8_as_spark_does(spark: SparkSession) -> None:
    """Spark decodes the text first (malformed bytes become U+FFFD): so does Sluice's parser
    for such text, instead of reading the bytes (which would refuse them)."""
    documents = [b'{"a":"\xff"}', b"\xff{}", b'{"a":"\xc3\xa9"}', b"\xef\xbb\xbf{}", b"\x00{}"]
    rows = parsed_both_ways(spark, documents)
    assert [r.sluice for r in rows] == [r.spark for r in rows]
    assert rows[0].spark == '{"a":"\ufffd"}'


def test_parse_agrees_on_random_bytes_valid_utf8_or_not(spark: SparkSession) -> None:
    """Sluice's parser reads the bytes in place only when they are well-formed UTF-8 (what
    Java's decoder reads without replacing anything): random byte strings inside a JSON
    string, with overlong forms, surrogates, code points past U+10FFFF, cut sequences and
    stray continuation bytes, parse as Spark parses them."""
    pieces = [
        b"a", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9d\x84\x9e", b"\xc0\x80", b"\xc2", b"\x80",
        b"\xe0\x80\x80", b"\xe0\xa0\x80", b"\xed\xa0\x80", b"\xed\x9f\xbf", b"\xef\xbf\xbf",
        b"\xf0\x80\x80\x80", b"\xf0\x90\x80\x80", b"\xf4\x8f\xbf\xbf", b"\xf4\x90\x80\x80",
        b"\xf5\x80\x80\x80", b"\xff", b"\xe2\x82", b"\\\\u00e9", b"abcdefgh",
    ]  # fmt: skip
    rnd = random.Random(7)
    documents = [
        b'{"a":"' + b"".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 6))) + b'"}'
        for _ in range(400)
    ]
    rows = parsed_both_ways(spark, documents)
    assert [r.sluice for r in rows] == [r.spark for r in rows]
    assert any("\ufffd" in (r.spark or "") for r in rows)  # malformed ones were among them
    assert any("é" in (r.spark or "") for r in rows)  # and well-formed non-ASCII ones
