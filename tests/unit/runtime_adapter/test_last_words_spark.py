"""A task's fatal error ends a real local Spark JVM (Spark's uncaught-exception handler exits
it); Sluice's listener (``LastWords.java``, loaded as a driver loads it) names the connector
whose task it was, and the worker reads that name from the log as it reads a driver's
(:func:`runtime_adapter.host.worker.offender`)."""

from __future__ import annotations

import subprocess
from types import SimpleNamespace
from typing import Any, cast

import pytest

from runtime_adapter.host.worker import offender
from tests.support.spark import run_driver_script

pytestmark = pytest.mark.spark

SCRIPT = """
import sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[2]")
         .config("spark.jars", sys.argv[1])
         .config("spark.extraListeners", "io.sluice.spark.LastWords")
         .config("spark.driver.memory", "512m")
         .config("spark.ui.enabled", "false").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
spark.range(4).selectExpr("id").collect()  # a neighbour's job: ends, is forgotten
spark.sparkContext.setLocalProperty("spark.scheduler.pool", sys.argv[2])
spark.range(4).selectExpr(sys.argv[3]).collect()
print("survived", flush=True)
"""


def run_driver(connector: str, expression: str) -> subprocess.CompletedProcess[str]:
    return cast(
        "subprocess.CompletedProcess[str]",
        run_driver_script(SCRIPT, connector, expression, timeout=180),
    )


def driver(killed_for: str = "") -> Any:
    return SimpleNamespace(killed_for=killed_for)


def test_a_task_out_of_memory_names_its_connector_in_the_last_words() -> None:
    # 2,000,000,000 characters per row: more than the 512 MiB heap holds (the SQL checks
    # refuse it at save; here it stands for whatever still gets through).
    ended = run_driver("conn-7f3a", "length(printf('%2000000000s', string(id)))")
    log = ended.stdout + ended.stderr
    assert "survived" not in log and ended.returncode != 0
    assert "java.lang.OutOfMemoryError" in log
    assert "sluice-last-words connector=conn-7f3a stage=" in log, log[-3000:]
    assert offender(driver(), log) == "conn-7f3a"
    assert offender(driver("stopped heartbeating"), log) is None  # killed: not its task


def test_a_jvm_that_ends_otherwise_says_nothing() -> None:
    ended = run_driver("conn-ok", "id + 1")
    assert ended.returncode == 0 and "survived" in ended.stdout
    assert "sluice-last-words" not in ended.stdout + ended.stderr
