"""A driver's view of its Spark executors, for the connector's status.

Read from the SparkContext's own status store (what the Spark UI and its REST API serve),
through py4j: it is filled whether or not the UI runs, needs no port, and costs one JVM
round trip per executor field, so drivers read it every few seconds, not every loop.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from runtime_adapter.base import ExecutorInfo

log = logging.getLogger("sluice.driver")

#: Seconds between two reads of the executor list.
REFRESH_INTERVAL = 3.0


def _host_port(host_port: str) -> tuple[str, int | None]:
    host, _, port = host_port.rpartition(":")
    if not host:
        return host_port, None
    return host.strip("[]"), int(port) if port.isdigit() else None


def executor_from_summary(summary: Any) -> ExecutorInfo:
    """One ``org.apache.spark.status.api.v1.ExecutorSummary`` (a py4j proxy) as plain data."""
    host, port = _host_port(str(summary.hostPort()))
    return ExecutorInfo(
        executor_id=str(summary.id()),
        host=host,
        port=port,
        cores=int(summary.totalCores()),
        active_tasks=int(summary.activeTasks()),
        completed_tasks=int(summary.completedTasks()),
        failed_tasks=int(summary.failedTasks()),
        memory_used=int(summary.memoryUsed()),
        memory_total=int(summary.maxMemory()),
    )


def read_executors(spark_context: Any) -> list[ExecutorInfo]:
    """The live executors of ``spark_context`` (the driver's own entry, ``driver``, included),
    ordered by id as Spark numbers them."""
    summaries = spark_context._jsc.sc().statusStore().executorList(True)
    executors = [executor_from_summary(summaries.apply(i)) for i in range(summaries.size())]

    def order(executor: ExecutorInfo) -> tuple[int, int, str]:
        numeric = executor.executor_id.isdigit()
        return (int(numeric), int(executor.executor_id) if numeric else 0, executor.executor_id)

    return sorted(executors, key=order)


class ExecutorWatch:
    """The latest executor list of a driver, re-read at most every ``interval`` seconds.

    A failed read keeps the previous list: executors are for display and must never take a
    connector down.
    """

    def __init__(self, interval: float = REFRESH_INTERVAL) -> None:
        self.interval = interval
        self.executors: list[ExecutorInfo] = []
        self._read_at = 0.0

    def current(self, spark_context: Any | None) -> list[ExecutorInfo]:
        if spark_context is None:
            return self.executors
        now = time.monotonic()
        if now - self._read_at >= self.interval:
            self._read_at = now
            try:
                self.executors = read_executors(spark_context)
            except Exception as exc:
                log.warning("could not read the executor list: %s", exc)
        return self.executors
