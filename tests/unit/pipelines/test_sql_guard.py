"""The SQL allow-list (issue 12, findings 1 and 2): the save-time check (sqlglot), the driver's
check (Spark's own parser), the session hardening, and that the two checks agree."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipelines.spec.configs.sql import SqlConfig
from pipelines.spec.sql_expressions import check_expression
from pipelines.spec.sql_functions import (
    ALLOWED_FUNCTIONS,
    DROPPED_FROM_SESSION,
    LITERAL_FUNCTIONS,
    refusal,
)
from pipelines.sql_guard import (
    HARDENED_CONF,
    UnsafeSqlExpression,
    check_with_spark,
    harden_session,
)
from pipelines.transforms.sql import compute_data_with_sql
from tests.unit.pipelines.event_rows import events_frame
from tests.unit.pipelines.sql_corpus import (
    ATTACKS,
    ISSUE_ATTACKS,
    LEGITIMATE,
    UNPARSABLE_ATTACKS,
)

REFLECT = "SELECT reflect('java.lang.System', 'getProperty', 'user.name')"


def saved(expression: str) -> str | None:
    """The save-time refusal of ``expression`` (None when accepted)."""
    try:
        check_expression(expression)
    except ValueError as exc:
        return str(exc)
    return None


def run_checked(spark: Any, expression: str) -> str | None:
    """The driver's refusal of ``expression`` (None when accepted)."""
    try:
        check_with_spark(spark, expression)
    except UnsafeSqlExpression as exc:
        return str(exc)
    return None


# -- save time: sqlglot, no Spark --------------------------------------------------------------


@pytest.mark.parametrize(("expression", "message"), ATTACKS + UNPARSABLE_ATTACKS)
def test_the_save_time_check_refuses_each_attack_and_says_why(
    expression: str, message: str
) -> None:
    refused = saved(expression)
    assert refused is not None, expression
    assert message in refused, refused


def test_the_issue_attacks_are_refused_as_spec_field_errors() -> None:
    expressions = ["subject", *(expression for expression, _ in ISSUE_ATTACKS)]
    with pytest.raises(ValueError) as raised:
        SqlConfig(expressions=expressions)
    locations = {error["loc"] for error in raised.value.errors()}  # type: ignore[attr-defined]
    assert locations == {("expressions", index) for index in range(1, len(expressions))}


@pytest.mark.parametrize("expression", LEGITIMATE)
def test_the_save_time_check_accepts_what_editors_write(expression: str) -> None:
    assert saved(expression) is None


def test_a_sum_of_190_terms_is_still_an_expression() -> None:
    assert check_expression("+".join(["length(id)"] * 190) + " AS n") == "n"


def test_the_output_name_rule_is_kept() -> None:
    assert check_expression("data:amount::double * 1.2 AS total") == "total"
    assert check_expression("data:order.id::string AS `order id`") == "order id"
    assert check_expression("subject") == "subject"
    for unnamed in ("data:amount::double * 2", "upper(id)", "id x", "data AS"):
        assert "AS <name>" in (saved(unnamed) or ""), unnamed


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("1 AS a; DROP TABLE t", "';' is not allowed"),
        ("id /* c */ AS a", "comments are not allowed"),
        ("id AS a -- c", "comments are not allowed"),
        ("'x AS y", "unterminated"),
        ("upper(id AS b", "unbalanced parentheses"),
        ("id + AS x", "not a Spark SQL expression"),
        ("(" * 2000 + "id" + ")" * 2000 + " AS x", "nested too deeply"),
        ("x" * 10_001 + " AS x", "at most 10000 characters"),
        # Issue 29 (finding 8): a flat sum of 941 terms exhausted the check's recursion (500).
        ("+".join(["id"] * 941) + " AS n", "levels deep (a chain of operators counts one"),
    ],
)
def test_a_text_that_does_not_parse_is_refused_clearly(expression: str, message: str) -> None:
    refused = saved(expression)
    assert refused is not None and message in refused, refused


@pytest.mark.spark
def test_every_refused_builtin_is_refused_by_name_at_save_time(spark: Any) -> None:
    """No Spark function outside the allow-list reaches an allowed sqlglot node, whatever
    sqlglot makes of its name and at any number of arguments."""
    builtins = registry_names(spark) | set(DROPPED_FROM_SESSION)
    refused = sorted(
        name for name in builtins - ALLOWED_FUNCTIONS if re.fullmatch(r"[a-z_][a-z0-9_]*", name)
    )
    assert {"reflect", "java_method", "try_reflect", "input_file_name", "explode"} <= set(refused)
    for name in refused:
        for arguments in ("", "id", "id, 1", "id, 1, 'x'"):
            assert refusal(name) in (saved(f"{name}({arguments}) AS x") or ""), name


@pytest.mark.spark
def test_the_allow_list_names_only_spark_builtins(spark: Any) -> None:
    assert registry_names(spark) >= ALLOWED_FUNCTIONS
    assert not ALLOWED_FUNCTIONS & set(DROPPED_FROM_SESSION)
    assert not ALLOWED_FUNCTIONS & {"current_user", "user", "session_user", "grouping__id"}
    assert {"current_date", "current_timestamp"} <= LITERAL_FUNCTIONS & ALLOWED_FUNCTIONS
    assert len(ALLOWED_FUNCTIONS) == 349


@pytest.mark.spark
def test_no_allowed_function_aggregates_generates_or_windows(spark: Any) -> None:
    jvm = spark._jvm
    registry = spark._jsparkSession.sessionState().functionRegistry()
    kinds = [
        jvm.java.lang.Class.forName(f"org.apache.spark.sql.catalyst.expressions.{kind}")
        for kind in ("aggregate.AggregateFunction", "Generator", "WindowFunction")
    ]
    for identifier in java_iter(registry.listFunction()):
        if identifier.funcName() in ALLOWED_FUNCTIONS:
            info = registry.lookupFunction(identifier).get()
            expression = jvm.java.lang.Class.forName(info.getClassName())
            assert not any(kind.isAssignableFrom(expression) for kind in kinds), info.getName()


# -- run time: Spark's own parser ----------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.parametrize(("expression", "message"), ATTACKS)
def test_the_driver_check_refuses_each_attack_and_says_why(
    spark: Any, expression: str, message: str
) -> None:
    refused = run_checked(spark, expression)
    assert refused is not None, expression
    assert message in refused, refused


@pytest.mark.spark
def test_the_driver_check_accepts_what_editors_write(spark: Any) -> None:
    refused = {text: run_checked(spark, text) for text in LEGITIMATE}
    assert not {text: why for text, why in refused.items() if why}


@pytest.mark.spark
def test_both_checks_agree_on_the_whole_corpus(spark: Any) -> None:
    """What sqlglot accepts, Spark's parser accepts, and the other way round."""
    corpus = [*LEGITIMATE, *(expression for expression, _ in ATTACKS + UNPARSABLE_ATTACKS)]
    disagreements = [
        (text, saved(text), run_checked(spark, text))
        for text in corpus
        if (saved(text) is None) != (run_checked(spark, text) is None)
    ]
    assert not disagreements


@pytest.mark.spark
def test_what_editors_write_runs_on_events(spark: Any, orders: DataFrame) -> None:
    columns = [F.expr(text).alias(f"c{index}") for index, text in enumerate(LEGITIMATE)]
    assert len(orders.select(*columns).collect()) == 2


@pytest.mark.spark
@pytest.mark.parametrize(("expression", "message"), ISSUE_ATTACKS)
def test_the_transform_refuses_an_attack_that_skipped_validation(
    orders: DataFrame, expression: str, message: str
) -> None:
    config = SqlConfig.model_construct(expressions=["subject", expression])
    with pytest.raises(UnsafeSqlExpression, match=re.escape(message)):
        compute_data_with_sql(orders, config)


# -- the hardened session -------------------------------------------------------------------


@pytest.mark.spark
def test_the_hardened_session_has_no_reflection(spark: Any) -> None:
    harden_session(spark)  # idempotent: the session fixture already did it
    for query in (
        REFLECT,
        "SELECT REFLECT('java.lang.System', 'getProperty', 'user.name')",
        "SELECT system.builtin.reflect('java.lang.System', 'getProperty', 'user.name')",
        "SELECT java_method('java.lang.System', 'getenv', 'HOME')",
        "SELECT try_reflect('java.lang.System', 'getenv', 'HOME')",
        "SELECT input_file_name()",
        "SELECT current_user()",
        "SELECT version()",
    ):
        with pytest.raises(PySparkException, match=r"UNRESOLVED_ROUTINE|REQUIRES_SINGLE_PART"):
            spark.sql(query).collect()


@pytest.mark.spark
def test_a_stream_session_cloned_from_it_stays_hardened(spark: Any) -> None:
    clone = spark._jsparkSession.cloneSession()
    with pytest.raises(Exception, match="UNRESOLVED_ROUTINE"):
        clone.sql(REFLECT).collectAsList()
    assert clone.conf().get("spark.sql.runSQLOnFiles") == "false"


@pytest.mark.spark
def test_the_hardened_session_reads_no_file_and_substitutes_no_variable(spark: Any) -> None:
    assert {key: spark.conf.get(key) for key in HARDENED_CONF} == HARDENED_CONF
    with pytest.raises(PySparkException):
        spark.sql("SELECT * FROM text.`/etc/hostname`").collect()
    os.environ["SLUICE_TEST_SECRET"] = "s3cr3t"
    try:
        rows = spark.range(1).select(F.expr("'${env:SLUICE_TEST_SECRET}' AS k")).collect()
    finally:
        del os.environ["SLUICE_TEST_SECRET"]
    assert rows[0].k == "${env:SLUICE_TEST_SECRET}"


@pytest.mark.spark
def test_the_hardened_session_loads_no_class_named_in_a_schema(spark: Any) -> None:
    """Spark would instantiate the class a JSON schema names (here a real UDT, so the
    analysis succeeds unhardened); hardened, the schema is not read as JSON at all."""
    udt = '{"type":"udt","class":"org.apache.spark.ml.linalg.VectorUDT","sqlType":"integer"}'
    field = f'{{"name":"a","type":{udt},"nullable":true,"metadata":{{}}}}'
    schema = f'{{"type":"struct","fields":[{field}]}}'
    with pytest.raises(PySparkException, match="PARSE_SYNTAX_ERROR"):
        spark.range(1).select(F.expr(f"from_json('{{}}', '{schema}')"))


@pytest.mark.spark
def test_the_hardened_session_still_runs_what_sluice_uses(spark: Any) -> None:
    row = spark.range(1).select(F.expr("uuid() IS NOT NULL"), F.spark_partition_id()).first()
    assert row[0] is True and row[1] >= 0


# -- helpers -------------------------------------------------------------------------------------


@pytest.fixture
def orders(spark: Any) -> DataFrame:
    return events_frame(
        spark,
        [
            {"data": {"amount": "10", "order": {"id": "o-1"}, "items": [{"sku": "a", "qty": 2}]}},
            {"data": {"amount": 2.5, "tags": ["vip"]}, "extensions": {"tenant": "acme"}},
        ],
    )


def registry_names(spark: Any) -> set[str]:
    registry = spark._jsparkSession.sessionState().functionRegistry()
    return {identifier.funcName() for identifier in java_iter(registry.listFunction())}


def java_iter(values: Any) -> Any:
    iterator = values.iterator()
    while iterator.hasNext():
        yield iterator.next()
