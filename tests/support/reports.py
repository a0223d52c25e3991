"""A stand-in for the runtime's store that keeps the statuses a driver reports, for tests of
what a hosted connector reports (the real store's ownership check is tested on Redis)."""

from __future__ import annotations

from runtime_adapter.base import ConnectorStatus


class ReportingStore:
    def __init__(self) -> None:
        self.reported: list[ConnectorStatus] = []

    def report(self, status: ConnectorStatus) -> bool:
        self.reported.append(status)
        return True
