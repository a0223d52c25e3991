"""Sluice's checkpoint file manager (``LocalCheckpointFileManager.java``) in a real session:
a query's offsets and commits are written by it (no Hadoop checksum files beside them) and a
query started again from the checkpoint goes on where it stopped."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from pipelines.native import CHECKPOINT_FILE_MANAGER, checkpoint_options
from tests.support.spark import local_spark, run_available_now

pytestmark = pytest.mark.spark

KEY = "spark.sql.streaming.checkpointFileManagerClass"


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    session = local_spark().newSession()  # the option is set on this session alone
    for key, value in checkpoint_options(session).items():
        session.conf.set(key, value)
    yield session


def test_the_manager_is_on_the_class_path() -> None:
    assert checkpoint_options(local_spark()) == {KEY: CHECKPOINT_FILE_MANAGER}


def run_once(spark: SparkSession, source: Path, checkpoint: Path) -> int:
    """Run a query over the files once (from the checkpoint); the rows it read."""
    schema = T.StructType([T.StructField("n", T.LongType())])
    read: list[int] = []
    writer = (
        spark.readStream.schema(schema)
        .json(str(source))
        .writeStream.foreachBatch(lambda batch, _: read.append(batch.count()))
    )
    run_available_now(writer, checkpoint)
    return sum(read)


def test_a_query_checkpoints_with_it_and_resumes_from_its_files(
    spark: SparkSession, tmp_path: Path
) -> None:
    assert spark.conf.get(KEY) == CHECKPOINT_FILE_MANAGER
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    source.mkdir()
    (source / "a.json").write_text("\n".join(json.dumps({"n": n}) for n in range(5)))
    assert run_once(spark, source, checkpoint) == 5
    (source / "b.json").write_text("\n".join(json.dumps({"n": n}) for n in range(5, 8)))
    assert run_once(spark, source, checkpoint) == 3  # only what came since

    for log in ("offsets", "commits"):
        files = sorted(p.name for p in (checkpoint / log).iterdir())
        assert files == ["0", "1"], f"{log}: {files}"  # no .crc, no temporary file left
    offsets = (checkpoint / "offsets" / "1").read_text().splitlines()
    assert offsets[0] == "v1" and json.loads(offsets[1])["batchWatermarkMs"] == 0
