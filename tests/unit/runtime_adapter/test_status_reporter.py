"""A hosted connector's status listener against a real Redis that goes away: no store error
reaches the connector, the freshest status is written when the store answers, the counts
kept meanwhile are added exactly once, and only another owner stops the connector."""

from __future__ import annotations

import pytest

from runtime_adapter.base import ConnectorStatus, Deployment
from runtime_adapter.host.reporter import StatusReporter
from runtime_adapter.spark import SparkRuntime
from runtime_adapter.states import State, TargetState
from runtime_adapter.store import RedisStore, ReportOutcome
from tests.support.tcp_proxy import TcpProxy


def running(batch: int, worker: str = "w1") -> ConnectorStatus:
    return ConnectorStatus("c1", State.RUNNING, worker, 0, progress={"batchId": batch})


def deploy(runtime: SparkRuntime, worker: str = "w1") -> None:
    runtime.deploy(Deployment("c1", "orders", 1, {}, TargetState.RUNNING, worker_id=worker))


@pytest.fixture
def proxy(redis_url: str):
    with TcpProxy(int(redis_url.rsplit(":", 1)[1].split("/")[0])) as proxy:
        yield proxy


@pytest.fixture
def reporter(proxy: TcpProxy, prefix: str) -> StatusReporter:
    return StatusReporter(
        RedisStore.from_url(f"redis://127.0.0.1:{proxy.port}/0", prefix), "c1", interval=10.0
    )


def test_an_outage_never_reaches_the_connector_and_the_freshest_status_follows_it(
    runtime, reporter, proxy
):
    deploy(runtime)
    assert reporter.report(running(1))
    reporter.count("dead_letters", 2)
    proxy.down()
    assert reporter.report(running(2)), "an unreachable store is no reason to stop"
    reporter.count("dead_letters", 3)  # from a micro-batch: must not raise
    reporter.count("sink_retries", 1)
    assert reporter.report(running(3))
    assert runtime.status(["c1"])["c1"].progress == {"batchId": 1}
    proxy.up()
    assert reporter.report(running(3))
    status = runtime.status(["c1"])["c1"]
    assert status.progress == {"batchId": 3}, "the freshest status, once the store answers"
    assert (status.dead_letters, status.sink_retries) == (5, 1), "each count added once"
    assert status.report_interval == 10.0, "the status carries its refresh promise"


def test_a_status_not_written_is_written_on_the_next_report_even_without_news(
    runtime, reporter, proxy
):
    deploy(runtime)
    proxy.down()
    assert reporter.report(running(1))
    proxy.up()
    assert reporter.report(running(1))
    assert runtime.status(["c1"])["c1"].progress == {"batchId": 1}


def test_an_emptied_store_is_no_reason_to_stop_and_the_resent_owner_gets_the_status(
    runtime, reporter
):
    deploy(runtime)
    assert reporter.report(running(1))
    store = runtime.store
    store.redis.delete(*store.redis.keys(f"{store.prefix}:*"))
    assert store.report(running(2)) is ReportOutcome.NO_OWNER
    assert reporter.report(running(2)), "no owner named: nobody else owns it either"
    deploy(runtime)  # the console re-sends the desired state
    assert reporter.report(running(2)), "not written before: written now, news or not"
    assert runtime.status(["c1"])["c1"].progress == {"batchId": 2}


def test_only_another_owner_stops_the_connector(runtime, reporter):
    deploy(runtime, worker="w2")
    assert runtime.store.report(running(1)) is ReportOutcome.NOT_OWNER
    assert not reporter.report(running(1))
