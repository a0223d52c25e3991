"""A hosted connector's status listener: it writes what the connector observes to the store,
and no store error ever reaches the connector.

The connector does its work; its :class:`StatusReporter` reports (Kafka Connect's
``TaskStatus.Listener``). A status is written when it says something new, and at least every
``interval`` seconds (the status carries that promise as its ``report_interval``: the console
shows a connector whose status is older than twice that as not reporting). When the store
cannot be reached, or no longer holds the connector's owner (it was emptied and the console
has not re-sent its desired state yet), nothing is written and the connector runs on: the
next report, the freshest status by then, is written as soon as the store answers. Counts
kept by the store (dead letters, sink retries) are added up here meanwhile and handed over
with the next write, so a ``foreachBatch`` that counts never fails its batch over the store.

Only a store that names another owner (another worker or generation) stops the connector:
:meth:`StatusReporter.report` returns False.

When the runtime group places channels, the status goes to the worker's host files
(:mod:`runtime_adapter.host.link`) instead, where its worker reads it, never through the
store: only the counts still go to the store, at best. The group's fence decides who runs a
connector then, not the store.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import asdict, replace
from typing import Any

from runtime_adapter.base import ConnectorStatus
from runtime_adapter.store import STORE_ERRORS, Outage, RedisStore, ReportOutcome

log = logging.getLogger("sluice.driver")


class StatusReporter:
    """Writes one connector's status as its owner (see the module docstring)."""

    def __init__(
        self, store: RedisStore, connector_id: str, interval: float, link: Any = None
    ) -> None:
        self.store = store
        self.link = link
        """The worker's host files (the group places), or None: the store takes the status."""
        self.connector_id = connector_id
        self.interval = interval
        self.reported: tuple[str, float] | None = None
        """What the last written status said (news only) and when (monotonic)."""
        self.unsent = {"dead_letters": 0, "sink_retries": 0}
        self.lock = threading.Lock()
        self.outage = Outage(f"connector {connector_id}'s status")

    def report(self, status: ConnectorStatus) -> bool:
        """Write ``status`` if it says something new or is due; False only when the store
        names another owner of the connector (it is not ours to run any more)."""
        status = replace(status, report_interval=self.interval)
        news = _news(status)
        now = time.monotonic()
        if self.reported is not None and not self.owes_counts():
            last, at = self.reported
            if last == news and now - at < self.interval:
                return True
        if self.link is not None and self.link is not self.store:
            self.link.report(status)
            self.reported = (news, now)
            try:
                self.send_counts()
            except STORE_ERRORS as exc:
                self.outage.failed(exc)  # kept here: sent with a later report
            else:
                self.outage.over()
            return True
        try:
            self.send_counts()
            outcome = self.store.report(status)
        except STORE_ERRORS as exc:
            self.reported = None  # the next report is written, news or not
            self.outage.failed(exc)
            return True
        if outcome == ReportOutcome.NOT_OWNER:
            return False
        if outcome == ReportOutcome.NO_OWNER:
            self.reported = None
            self.outage.failed("the store holds no owner for it (emptied, not re-sent yet)")
            return True
        self.outage.over()
        self.reported = (news, now)
        return True

    def count(self, kind: str, count: int) -> None:
        """Add ``count`` to the store's total of ``kind`` (``dead_letters`` or
        ``sink_retries``); kept here while the store cannot take it. Never raises: it is
        called from a micro-batch, which must not fail over a count."""
        with self.lock:
            self.unsent[kind] += count
        try:
            self.send_counts()
        except STORE_ERRORS as exc:
            self.outage.failed(exc)

    def owes_counts(self) -> bool:
        with self.lock:
            return any(self.unsent.values())

    def send_counts(self) -> None:
        """Hand the counts kept here to the store (raises its error; they are kept then)."""
        with self.lock:
            owed, self.unsent = self.unsent, dict.fromkeys(self.unsent, 0)
        try:
            if owed["dead_letters"]:
                self.store.add_dead_letters(self.connector_id, owed["dead_letters"])
                owed["dead_letters"] = 0
            if owed["sink_retries"]:
                self.store.add_sink_retries(self.connector_id, owed["sink_retries"])
                owed["sink_retries"] = 0
        finally:
            with self.lock:
                for kind, left in owed.items():
                    self.unsent[kind] += left


def _news(status: ConnectorStatus) -> str:
    """What a status says, less what changes with every report of an unchanged connector."""
    return json.dumps(
        asdict(replace(status, progress=_settled(status.progress), executors=[])),
        sort_keys=True,
        default=str,
    )


def _settled(progress: dict[str, Any] | None) -> dict[str, Any] | None:
    """A progress report without what differs between two reports of the same batch."""
    if not progress:
        return progress
    return {"batchId": progress.get("batchId"), "numInputRows": progress.get("numInputRows")}
