"""Schema discovery's samples of one running query's source, taken beside the query.

A :class:`SourceSampling` holds a query's :class:`pipelines.discovery.SourceSampler` and runs
each sample it asks for on a thread of its own, one at a time: a sample is a small Spark batch
job that reads the source's brokers, and waits for them while one is away (Spark's Kafka
reader asks again until its timeouts), so it must never run on the connector's loop, which
reports the status. The thread inherits the loop's local properties (the channel's scheduler
pool: its jobs share the channel's cores, not its neighbours'); its jobs run in a job group of
their own, which :meth:`SourceSampling.cancel` cancels when the query stops.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from runtime_adapter.logs import log_context
from runtime_adapter.store import RedisStore

log = logging.getLogger("sluice.driver")

DISCOVERY_KEEP = 200
"""Sampled events a connector keeps for the console at most (it takes them every few
seconds; older ones are dropped if it does not)."""


class SourceSampling:
    """One running query's samples (see the module docstring)."""

    def __init__(self, store: RedisStore, connector_id: str, sampler: Any) -> None:
        self.store = store
        self.connector_id = connector_id
        self.sampler = sampler
        self.jobs = f"sluice-sample-{connector_id}"
        """The Spark job group of its samples."""
        self.thread: threading.Thread | None = None
        """The last sample's thread."""
        self.cancelled = False

    def offer(self, spark: Any, progress: dict[str, Any] | None, channel: str) -> bool:
        """Start a sample beside the query when one is due and none is under way (``progress``:
        the query's latest report, none before its first batch); True when one started."""
        if self.cancelled or not progress:
            return False
        if self.thread is not None and self.thread.is_alive():
            return False
        if not self.sampler.due(time.monotonic()):
            return False
        from pyspark import InheritableThread  # the loop's scheduler pool, inherited

        from pipelines.spec.reach import carried

        self.thread = InheritableThread(
            target=carried(self.sample),  # within the team's reach, as the query
            args=(spark, progress, channel),
            name=f"sample-{self.connector_id}",
            daemon=True,
        )
        self.thread.start()
        return True

    def sample(self, spark: Any, progress: dict[str, Any], channel: str) -> None:
        """One sample, on its thread: its events handed to the console unless cancelled."""
        with log_context(connector=self.connector_id, channel=channel):
            try:
                spark.sparkContext.setJobGroup(
                    self.jobs, "schema discovery: a sample of the source", True
                )
                events = self.sampler.sample(spark, progress, time.monotonic())
                if events and not self.cancelled:
                    self.store.publish_samples(self.connector_id, events, DISCOVERY_KEEP)
            except Exception as exc:  # discovery must never take a channel down
                if not self.cancelled:
                    log.warning("could not sample the source for schema discovery: %s", exc)

    def cancel(self, spark: Any) -> None:
        """No more samples: the running one's jobs are cancelled and what it found is not
        handed over. A sample still planning its read (asking the source's brokers for
        offsets) is not a job yet: it ends on its own, within the source's API timeout."""
        self.cancelled = True
        if self.thread is None or not self.thread.is_alive():
            return
        try:
            spark.sparkContext.cancelJobGroup(self.jobs)
        except Exception as exc:  # the JVM may be gone; the thread dies with it
            log.info("could not cancel the sample of %s: %s", self.connector_id, exc)
