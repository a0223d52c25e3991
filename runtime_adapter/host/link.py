"""The link between a runtime worker and its drivers on one host, in files: no Redis between them.

When the runtime group places channels, a worker and its drivers talk through a folder of
the worker's own (``{var_dir}/host/{worker id}``), never through Redis: a Redis outage must not
stop a worker from starting the channels of a slot it gains, nor a driver from running them
(Kafka Connect's workers need nothing but Kafka either). The folder holds:

* ``placed/{driver}.json``: what the worker placed in that driver, each connector's
  :class:`~runtime_adapter.store.Placement` with its :class:`~runtime_adapter.base.Deployment`
  (read by the worker from the config topic). Written by the worker only, whole, by an atomic
  rename, whenever it changes: a new file *is* the nudge (a driver polls its identity);
* ``retired/{driver}``: the worker asks that driver to stop its queries and exit;
* ``drivers/{driver}.json``: the driver's heartbeat (:class:`~runtime_adapter.base.DriverInfo`);
* ``status/{connector}.json``: the connector's latest status as its driver (or the worker)
  reported it, stamped with the time of the report.

Every file is written to a temporary name and renamed over the old one, so a reader sees a
whole file or the previous one, never half of one. The folder is emptied when the worker
starts: what an earlier run left there died with it (drivers get a parent-death signal).

:class:`HostFiles` offers the driver's and the worker's side under the method names of
:class:`~runtime_adapter.store.RedisStore`'s (``placed_deployments``, ``report``,
``driver_heartbeat``…): a driver is handed either, and runs the same (:func:`open_link`).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from runtime_adapter.base import ConnectorStatus, Deployment, DriverInfo
from runtime_adapter.group.desired import deployment_from_json, deployment_to_json
from runtime_adapter.store import (
    Placement,
    ReportOutcome,
    _known,
    status_from_text,
    status_to_json,
)

POLL = 0.05
"""Seconds between two looks of a waiting driver at its placements file (a nudge's delay)."""


def _name(key: str) -> str:
    """A file name for a connector or driver id: every character but letters, digits, ``-``
    and ``_`` escaped, so no id names a path outside its folder (``..``, ``/``)."""
    return "k" + quote(key, safe="-_").replace(".", "%2E")


def _key(name: str) -> str:
    return unquote(name[1:])


def write_whole(path: Path, text: str) -> None:
    """Write ``path`` whole: a reader sees this text or the previous one."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


class HostFiles:
    """One worker's host link (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        for folder in ("placed", "retired", "drivers", "status"):
            (root / folder).mkdir(parents=True, exist_ok=True)
        self._placements: dict[str, dict[str, Placement]] = {}
        """The worker's side: what it placed in each driver (the files are written from it)."""
        self._handed: dict[str, dict[str, tuple[Placement, Deployment]]] = {}
        """The worker's side: what each driver's placements file was last written from."""
        self._seen: dict[str, tuple[int, int] | None] = {}
        """The driver's side: the identity of its placements file at its last read."""

    @classmethod
    def of_worker(cls, var_dir: Path, worker_id: str) -> HostFiles:
        return cls(cls.root_of(var_dir, worker_id))

    @staticmethod
    def root_of(var_dir: Path, worker_id: str) -> Path:
        """The folder of a worker's files on its host (``{var}/host/<worker>``)."""
        return var_dir / "host" / _name(worker_id)

    def clear(self) -> None:
        """Forget what an earlier run of the worker left (its drivers died with it)."""
        for folder in ("placed", "retired", "drivers", "status"):
            for path in (self.root / folder).iterdir():
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()

    # -- the worker places; the driver reads --------------------------------------------------

    def epoch(self) -> str | None:
        """None: a folder of the host's own is never emptied under a running worker (the
        store's epoch, :class:`~runtime_adapter.store.StoreWatch`, has nothing to guard)."""
        return None

    def placed_under(self, driver_id: str) -> str | None:
        return None

    def mark_placements(self, driver_id: str, epoch: str) -> None:
        pass

    def place(
        self, driver_id: str, connector_id: str, placement: Placement, epoch: str | None = None
    ) -> None:
        self._placements.setdefault(driver_id, {})[connector_id] = placement

    def unplace(self, driver_id: str, connector_id: str) -> None:
        self._placements.get(driver_id, {}).pop(connector_id, None)

    def hand_over(self, deployments: Mapping[str, Deployment]) -> list[str]:
        """Write each driver's placements file anew where it changed: its placements, each
        with the connector's deployment in ``deployments`` (what the worker runs, as this pass
        read it). Returns the drivers whose file changed (each one's nudge). A driver whose
        placements and deployments equal those last handed over costs no serialization (the
        worker calls this after each step of its pass)."""
        changed = []
        for driver_id, placed in self._placements.items():
            handed = {
                cid: (placement, deployments[cid])
                for cid, placement in placed.items()
                if cid in deployments
            }
            if self._handed.get(driver_id) == handed:
                continue
            entries = {
                cid: {
                    "placement": asdict(placement),
                    "deployment": json.loads(deployment_to_json(deployment)),
                    # (the config topic's form leaves out the worker: the driver checks it)
                    "worker_id": deployment.worker_id,
                }
                for cid, (placement, deployment) in sorted(handed.items())
            }
            write_whole(self.root / "placed" / f"{_name(driver_id)}.json", json.dumps(entries))
            self._handed[driver_id] = handed
            changed.append(driver_id)
        return changed

    def placed_deployments(
        self, driver_id: str
    ) -> tuple[dict[str, Placement], dict[str, Deployment]]:
        """The driver's side: its placements and their connectors' deployments."""
        path = self.root / "placed" / f"{_name(driver_id)}.json"
        self._seen[driver_id] = self._identity(path)
        text = _read(path)
        placements: dict[str, Placement] = {}
        deployments: dict[str, Deployment] = {}
        for cid, entry in json.loads(text or "{}").items():
            placements[cid] = Placement(**_known(Placement, entry["placement"]))
            deployment = deployment_from_json(json.dumps(entry["deployment"]).encode())
            deployments[cid] = replace(deployment, worker_id=entry.get("worker_id"))
        return placements, deployments

    def placements(self, driver_id: str) -> dict[str, Placement]:
        return self.placed_deployments(driver_id)[0]

    def nudge(self, *ids: str | None) -> None:
        """Nothing to do: a driver notices its new placements file by itself."""

    def wait_nudge(self, driver_id: str, timeout: float) -> bool:
        """The driver's side: wait until its placements file changes or it is retired, or
        ``timeout`` seconds pass; True when it changed."""
        deadline = time.monotonic() + timeout
        path = self.root / "placed" / f"{_name(driver_id)}.json"
        while True:
            if self._identity(path) != self._seen.get(driver_id) or self.retired(driver_id):
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(POLL, left))

    @staticmethod
    def _identity(path: Path) -> tuple[int, int] | None:
        try:
            stat = path.stat()
        except FileNotFoundError:
            return None
        return (stat.st_ino, stat.st_mtime_ns)

    def retire(self, driver_id: str) -> None:
        (self.root / "retired" / _name(driver_id)).touch()

    def retired(self, driver_id: str) -> bool:
        return (self.root / "retired" / _name(driver_id)).exists()

    # -- drivers heartbeat ---------------------------------------------------------------------

    def driver_heartbeat(self, info: DriverInfo) -> None:
        write_whole(
            self.root / "drivers" / f"{_name(info.driver_id)}.json", json.dumps(asdict(info))
        )

    def drivers(self) -> list[DriverInfo]:
        found = []
        for path in (self.root / "drivers").glob("k*.json"):
            text = _read(path)
            if text:
                found.append(DriverInfo(**_known(DriverInfo, json.loads(text))))
        return found

    def forget_driver(self, driver_id: str) -> None:
        """Drop a driver that is gone: its heartbeat, its placements, its retirement."""
        name = _name(driver_id)
        for path in (
            self.root / "drivers" / f"{name}.json",
            self.root / "placed" / f"{name}.json",
            self.root / "retired" / name,
        ):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        self._placements.pop(driver_id, None)
        self._handed.pop(driver_id, None)

    # -- statuses -----------------------------------------------------------------------------

    def report(self, status: ConnectorStatus) -> ReportOutcome:
        """Write ``status``, stamped now. Always written: on this host, who runs a connector
        is the worker's to say (it owns the slot), and the status topic fences its writes."""
        stamped = replace(status, updated_at=time.time())
        write_whole(
            self.root / "status" / f"{_name(status.connector_id)}.json", status_to_json(stamped)
        )
        return ReportOutcome.WRITTEN

    def report_many(self, statuses: list[ConnectorStatus]) -> list[ReportOutcome]:
        return [self.report(status) for status in statuses]

    def status_texts(
        self,
        connector_ids: Iterable[str],
        counts: Mapping[str, tuple[int, int]] | None = None,
    ) -> dict[str, str]:
        """Each connector's status as written, with its counts (dead letters, sink retries:
        kept by the console's store, ``counts``; 0 where unknown), as
        :meth:`~runtime_adapter.store.RedisStore.status_texts` gives them."""
        texts = {}
        for cid in connector_ids:
            raw = _read(self.root / "status" / f"{_name(cid)}.json")
            if raw:
                dead, retried = (counts or {}).get(cid, (0, 0))
                texts[cid] = f"{dead} {retried} {raw}"
        return texts

    def statuses(self, connector_ids: Iterable[str]) -> dict[str, ConnectorStatus]:
        return {cid: status_from_text(t) for cid, t in self.status_texts(connector_ids).items()}

    def keep_statuses(self, connector_ids: Iterable[str]) -> int:
        """Remove the status files of every connector but ``connector_ids`` (it left this
        worker); how many were removed."""
        keep = {_name(cid) for cid in connector_ids}
        removed = 0
        for path in (self.root / "status").glob("k*.json"):
            if path.stem not in keep:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    removed += 1
        return removed

    def reported(self) -> set[str]:
        """The connectors that have a status file."""
        return {_key(path.stem) for path in (self.root / "status").glob("k*.json")}


def open_link(link: str | None, store: Any) -> Any:
    """What a driver talks to its worker through: the host folder ``link`` when its worker
    named one (``--link``), else the store itself (the console places channels)."""
    return HostFiles(Path(link)) if link else store
