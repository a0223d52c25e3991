"""The one local SparkSession of a test run, with Spark's Kafka connector on its class path.

Only one SparkContext can exist per process and jars can only be added when it starts, so
every test module that needs Spark gets its session from :func:`local_spark`: whichever
module asks first creates it, the same way.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from runtime_adapter.config import RuntimeConfig
from tests.support.processes import refuse_without_services


def spark_jars() -> str:
    """Comma-separated paths of the jars every driver gets (Spark's Kafka connector and
    Sluice's Spark functions, :meth:`RuntimeConfig.spark_jars`; "" when not fetched yet)."""
    return ",".join(str(path) for path in RuntimeConfig.from_env().spark_jars())


def run_driver_script(script: str, *args: str, timeout: float = 300) -> Any:
    """Run ``script`` in a JVM of its own (a Python process with Sluice's jars as its first
    argument, then ``args``), as a driver would be: a test may watch it die. Fails the test
    when Sluice's Spark functions were not built."""
    import subprocess

    import pytest

    refuse_without_services("a Spark driver (a JVM)")
    if not any(RuntimeConfig.from_env().functions_dir.glob("*.jar")):
        pytest.fail("Sluice's Spark functions are missing (make jars)")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    return subprocess.run(
        [sys.executable, "-c", script, spark_jars(), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def local_spark() -> Any:
    """The process's local SparkSession (2 cores, no UI, the jars of :func:`spark_jars`)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers run this interpreter (the venv), as a driver's do (PYSPARK_PYTHON).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from pipelines.sql_guard import harden_session

    session = (
        SparkSession.builder.master("local[2]")
        .appName("sluice-pipelines-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.jars", spark_jars())
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    harden_session(session)  # as every driver does (runtime_adapter.host.driver)
    # py4j logs at INFO when its sockets close, after pytest has closed the log streams.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    return session


def refuse_spark_jvms() -> None:
    """Make every Spark JVM this process would start fail its test at once (pytest's
    ``--no-services``): a test that builds a SparkSession by any path, not only through the
    ``spark`` fixture, is caught before the JVM's start-up seconds."""
    import pyspark.core.context

    def refused(*args: object, **kwargs: object) -> Any:
        refuse_without_services("a Spark JVM")

    pyspark.core.context.launch_gateway = refused  # type: ignore[assignment]


def run_available_now(writer: Any, checkpoint: Any) -> Any:
    """Start ``writer`` with its checkpoint in ``checkpoint`` and ``availableNow``: it reads
    what its source holds and stops by itself (within two minutes, or the test fails)."""
    query = writer.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    try:
        assert query.awaitTermination(120), "the query did not finish"
    finally:
        query.stop()
    return query
