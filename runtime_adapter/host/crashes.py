"""The quarantine's memory: how many shared drivers each connector's tasks brought down.

A runtime worker counts, per connector and revision, the shared drivers whose JVM one of the
connector's tasks ended (:func:`runtime_adapter.host.worker.offender`), and the times the
memory watch of a shared driver stopped the connector for filling the driver's memory
(``MemoryWatch.java``: it would have ended the JVM). At
:data:`QUARANTINE_AFTER` the connector runs only in a driver of its own until a new revision.
The counts are kept in a file of the worker's on its host (written whole, atomically), so a
restart of the worker does not forget them; a connector that moves to another worker starts
afresh there.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from runtime_adapter.host.link import write_whole

log = logging.getLogger("sluice.worker")

QUARANTINE_AFTER = 2
"""Shared drivers a connector may bring down before it runs only in a driver of its own."""
MAX_ENTRIES = 10_000
"""Connectors remembered at most (the oldest crash is forgotten first)."""


class CrashBook:
    """Crash counts by connector: ``{cid: [revision, count, last crash (epoch s)]}``."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, list[float]] = {}
        if path is not None:
            try:
                loaded = json.loads(path.read_text())
                self.entries = {
                    str(cid): [float(value) for value in entry][:3]
                    for cid, entry in loaded.items()
                    if isinstance(entry, list) and len(entry) == 3
                }
            except FileNotFoundError:
                pass
            except (OSError, ValueError, TypeError, AttributeError) as exc:
                log.warning("crash counts in %s unreadable, starting afresh: %s", path, exc)

    def crashed(self, cid: str, revision: int) -> int:
        """Count a shared driver's crash against ``cid``; how many it has made in ``revision``."""
        entry = self.entries.get(cid)
        count = int(entry[1]) + 1 if entry is not None and int(entry[0]) == revision else 1
        self.entries[cid] = [revision, count, time.time()]
        if len(self.entries) > MAX_ENTRIES:
            oldest = min(self.entries, key=lambda key: self.entries[key][2])
            del self.entries[oldest]
        self.save()
        return count

    def count(self, cid: str, revision: int) -> int:
        """The crashes counted against ``cid`` in ``revision``."""
        entry = self.entries.get(cid)
        return int(entry[1]) if entry is not None and int(entry[0]) == revision else 0

    def quarantined(self, cid: str, revision: int) -> bool:
        entry = self.entries.get(cid)
        if entry is None:
            return False
        if int(entry[0]) != revision:
            del self.entries[cid]  # a new revision starts afresh
            self.save()
            return False
        return entry[1] >= QUARANTINE_AFTER

    def save(self) -> None:
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_whole(self.path, json.dumps(self.entries))
        except OSError as exc:  # kept in memory all the same
            log.warning("could not write crash counts to %s: %s", self.path, exc)
