"""Schema discovery's samples run beside a hosted connector's loop, on a real local Spark: the
loop (which reports the connector's status) never waits for one, one runs at a time, and a
sample under way is cancelled, its Spark job with it, when the connector closes."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from runtime_adapter.config import RuntimeConfig
from runtime_adapter.host.hosted import HostedConnector
from runtime_adapter.host.sampling import SourceSampling
from runtime_adapter.store import Placement
from tests.support.processes import wait_until
from tests.support.reports import ReportingStore
from tests.support.spark import local_spark


@pytest.fixture(scope="module")
def spark() -> Any:
    return local_spark()  # shared with other modules: never stopped here


class SamplingStore(ReportingStore):
    def __init__(self) -> None:
        super().__init__()
        self.samples: list[dict[str, Any]] = []

    def publish_samples(self, connector_id: str, events: list[dict[str, Any]], keep: int) -> None:
        self.samples.extend(events)


class Sampler:
    """A source sampler whose sample is a Spark job of ``seconds``; always due."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.calls = 0
        self.started = threading.Event()

    def due(self, now: float) -> bool:
        return True

    def sample(self, spark: Any, progress: Any, now: float) -> list[dict[str, Any]]:
        self.calls += 1
        self.started.set()
        seconds = self.seconds
        spark.sparkContext.parallelize([1], 1).map(lambda x: time.sleep(seconds) or x).count()
        return [{"id": f"sample-{self.calls}"}]


def hosted(spark: Any, store: SamplingStore, sampler: Sampler) -> HostedConnector:
    connector = HostedConnector(
        store,  # type: ignore[arg-type]
        RuntimeConfig.from_env(),
        connector_id=f"c-{id(sampler)}",
        worker_id="w1",
        generation=0,
        placement=Placement(0, 1, 1.0),
        spark=spark,
    )
    connector.spark = spark
    connector.sampling = SourceSampling(store, connector.connector_id, sampler)  # type: ignore[arg-type]
    return connector


def test_a_slow_sample_never_holds_up_the_loop_and_is_cancelled_at_close(spark: Any) -> None:
    store, sampler = SamplingStore(), Sampler(seconds=120)
    connector = hosted(spark, store, sampler)

    asked = time.monotonic()
    for batch in range(5):
        connector.sample_source({"batchId": batch})
    waited = time.monotonic() - asked
    # a sample takes 120 s, five calls that hand it over milliseconds: a quarter of the
    # sample's time is far from both (a busy machine cannot stretch the calls past it)
    assert waited < 30, f"the loop waited {waited:.1f} s for a sample"
    assert sampler.started.wait(30)
    assert sampler.calls == 1  # one sample at a time

    sampling = connector.sampling
    assert sampling is not None and sampling.thread is not None
    tracker = spark.sparkContext.statusTracker()
    wait_until(lambda: tracker.getJobIdsForGroup(sampling.jobs), 30, what="its job")
    connector.close()
    sampling.thread.join(60)
    assert not sampling.thread.is_alive(), "the sample's job was not cancelled"
    assert store.samples == []
    # The sample's job group is gone with it: the next job of this process runs at once.
    assert spark.sparkContext.parallelize([1, 2], 1).count() == 2


def test_a_sample_is_handed_to_the_store_from_its_own_thread(spark: Any) -> None:
    store, sampler = SamplingStore(), Sampler(seconds=0)
    connector = hosted(spark, store, sampler)

    connector.sample_source({"batchId": 0})
    wait_until(lambda: store.samples, 60, what="the sample in the store")
    assert store.samples == [{"id": "sample-1"}]
    sampling = connector.sampling
    assert sampling is not None and sampling.thread is not None
    assert sampling.thread.name == f"sample-{connector.connector_id}"
    assert not sampling.offer(spark, None, "c")  # none before the query's first batch
