"""Sluice's memory watch (``MemoryWatch.java``, a Spark plugin loaded as a driver loads it)
in a real local Spark JVM: a job that holds more and more of the heap is the one cancelled,
with the figures; the JVM and a neighbour's jobs, in a scheduler pool of their own, run on."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.spark import run_driver_script

pytestmark = pytest.mark.spark

SCRIPT = """
import sys, time
from pyspark import InheritableThread
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[2]")
         .config("spark.jars", sys.argv[1])
         .config("spark.plugins", "io.sluice.spark.MemoryWatch")
         .config("spark.sluice.memoryWatch.heapFraction", "0.4")
         .config("spark.scheduler.mode", "FAIR")
         .config("spark.driver.memory", "512m")
         .config("spark.ui.enabled", "false").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
source = sys.argv[2]
# 3,000,000 lines of about 1 KB: 3 GB held by the job below, six times the heap.
spark.range(0, 3000000, 1, 2).selectExpr("repeat(string(id), 200)").write.text(source)
done = []
def neighbour():
    spark.sparkContext.setLocalProperty("spark.scheduler.pool", "calm-neighbour")
    for _ in range(20):
        done.append(spark.range(0, 200000, 1, 1).selectExpr("sum(id) AS s").collect()[0].s)
        time.sleep(0.2)
calm = InheritableThread(target=neighbour)
calm.start()
spark.sparkContext.setLocalProperty("spark.scheduler.pool", "hog-7f3a")
try:
    spark.read.text(source).coalesce(1).selectExpr("size(collect_list(value))").collect()
    print("hog finished", flush=True)
except Exception as exc:
    stopped = [line for line in str(exc).splitlines() if "memory watch" in line]
    print("hog stopped:", stopped[0] if stopped else str(exc)[:2000], flush=True)
calm.join()
print("neighbour ran", len(done), "jobs, each", set(done), flush=True)
spark.range(4).selectExpr("id").collect()
print("survived", flush=True)
"""


def test_the_job_that_holds_the_heap_is_cancelled_not_the_jvm(tmp_path: Path) -> None:
    ended = run_driver_script(SCRIPT, str(tmp_path / "lines"))
    log = ended.stdout + ended.stderr
    assert ended.returncode == 0 and "survived" in ended.stdout, log[-4000:]
    assert "java.lang.OutOfMemoryError" not in log
    # The driver side's line, which the runtime worker reads, and the reason the job got.
    assert "sluice-memory-watch connector=hog-7f3a stage=" in ended.stderr, log[-4000:]
    assert "hog stopped: " in ended.stdout and "hog finished" not in ended.stdout
    stopped = ended.stdout.split("hog stopped: ", 1)[1].splitlines()[0]
    assert (
        "Sluice's memory watch stopped connector hog-7f3a: heap after garbage collection" in stopped
    )
    assert "over the limit of 204 MiB (40 %)" in stopped
    # The neighbour's twenty jobs all ran, with the right answer.
    assert "neighbour ran 20 jobs, each {19999900000}" in ended.stdout
    assert "sluice-memory-watch connector=calm-neighbour" not in ended.stderr
