"""A runtime worker's statuses in the runtime's status topic, fenced by its group generation.

The worker tells the relay which connectors it runs (:meth:`StatusRelay.own`, at every pass
of its loop); the relay's own thread reads their statuses from their drivers' reports (the
store) every ``interval`` seconds and writes to the status topic what is *new* about each:
its state, generation,
trace and reason, its driver, its tasks' positions and its counts, whenever one of those
changes, never a mere refresh. Every write is a :class:`~runtime_adapter.group.StatusWriter`
transaction fenced by the worker's :class:`~runtime_adapter.group.Ownership`: a worker that
is no longer a member of the group's current generation has its write refused, and nothing of
it becomes visible to readers.

Whether a connector still *reports* is judged here, on this host's monotonic clock: a status
of a hosted connector whose report was not refreshed within twice its ``report_interval``
(the driver's promise) less :func:`judgement_margin` is written again with ``reporting``
false, and with ``reporting`` true once a refresh arrives. The judgement goes on while the
store cannot be read (its reports cannot arrive then). A reader learns that the others still
report without a record each: every half report interval the relay writes one record of the
worker's own (key ``@worker:<id>``, in a slot it owns), which names the connectors it vouches
for (those whose latest record is written and reporting) with how many seconds ago each was
last refreshed; a reader dates their reports by it.
A connector the vouches stop naming, or a worker whose vouches stop (dead, cut off, frozen),
runs out of reports within twice the interval, as when a driver stops reporting. Whether the
*worker* still runs is the group's to say: a worker that leaves or dies leaves the group, and
a partitioned one fences itself.

The relay also keeps the status topic clean, as the owner of its slots: a connector deleted
from a slot it owns (gone from the slot's desired state) gets a tombstone, and every slot it
gains is swept once, ready (read to its end): a record of a connector the slot's desired state
does not hold (deleted while no one owned the slot), or another worker's own record left there,
gets a tombstone too. Tombstones go through the same fenced transactions.

What a record holds is :func:`status_record`; ``docs/runtime-group.md`` has the design.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol

from runtime_adapter.base import ConnectorStatus, RuntimeUnavailable
from runtime_adapter.group import (
    GroupConfig,
    NotOwner,
    Ownership,
    StatusRejected,
    StatusWriter,
    slot_of,
)
from runtime_adapter.group.status import VOUCH_PREFIX, StatusScanner, vouch_key
from runtime_adapter.states import State
from runtime_adapter.store import STORE_ERRORS, Outage, status_from_text

log = logging.getLogger("sluice.worker")

MAX_TRACE = 8_000
"""Characters of a trace a record keeps: its beginning and its end (a JVM trace names its
error on its first line, a Python one on its last), the middle of a longer one cut out."""
_CUT = "\n… (trace cut) …\n"


def bounded_trace(trace: str) -> str:
    """``trace`` when it fits :data:`MAX_TRACE`, else its beginning and end."""
    if len(trace) <= MAX_TRACE:
        return trace
    half = (MAX_TRACE - len(_CUT)) // 2
    return trace[:half] + _CUT + trace[-half:]


_JUDGED_STATES = frozenset({State.RUNNING, State.PAUSED, State.RESTARTING})
"""States whose report a driver refreshes while it hosts the connector: the ones that go
stale when it stops reporting."""


WRITE_TIMEOUT = 3.0
"""Seconds each of a status write's calls into Kafka may take (the offsets sent to the
transaction, its commit, an abort): a write that fails is tried again at the next poll."""
WRITE_PATIENCE = 8.0
"""Seconds the relay waits for a write before it gives up on its writer. librdkafka's
``send_offsets_to_transaction`` can block far beyond its timeout when the group's coordinator
broker dies mid-call (the fault suite's killed coordinator that was also the active KRaft
controller: a worker's relay stayed in it for minutes, its statuses frozen). The wedged call is
left to its thread; the next poll opens a new writer under the same transactional id, whose
``init_transactions`` fences the old one (its transaction is aborted, its late calls fail)."""
MAX_WEDGED = 3
"""Writes given up on that may still be inside librdkafka (each holds a thread and a
producer) before the relay opens no new writer until one of them returns: a Kafka that wedges
every write does not pile up threads and producers."""


def judgement_margin(interval: float) -> float:
    """How much sooner than twice its interval a report is judged overdue here: the time a
    reader may take to learn it (a relay and a control-loop pass), so that it never shows a
    connector reporting later than twice the interval after its driver's last report."""
    return min(2.0, interval / 4)


def settled_progress(progress: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the status topic keeps of a progress report: the batch, its rows and how long it
    took (``durationMs.triggerExecution``, the console's batch duration); a new batch changes
    the record anyway, so keeping its duration costs no record."""
    if not progress:
        return progress
    settled = {"batchId": progress.get("batchId"), "numInputRows": progress.get("numInputRows")}
    durations = progress.get("durationMs")
    took = durations.get("triggerExecution") if isinstance(durations, dict) else None
    if isinstance(took, (int, float)) and not isinstance(took, bool):
        settled["durationMs"] = {"triggerExecution": took}
    return settled


def status_record(status: ConnectorStatus, reporting: bool | None = None) -> dict[str, Any]:
    """What the status topic holds of ``status``: the status without what changes with every
    refresh of an unchanged connector (its ``updated_at``, its executors, its progress report
    but what :func:`settled_progress` keeps), its trace cut to :data:`MAX_TRACE`, and
    ``reporting`` (when given; the relay adds it, with ``updated_at``, when it writes)."""
    settled = settled_progress(status.progress)
    record = asdict(
        replace(
            status,
            updated_at=0.0,
            executors=[],
            progress=settled,
            trace=bounded_trace(status.trace),
        )
    )
    record.pop("updated_at")
    record.pop("executors")
    record["state"] = str(status.state)
    if reporting is not None:
        record["reporting"] = reporting
    return record


class Writer(Protocol):
    """What the relay needs of a :class:`~runtime_adapter.group.StatusWriter`."""

    def open(self) -> None: ...

    def write(
        self,
        ownership: Ownership,
        statuses: Mapping[str, Mapping[str, Any] | None],
        *,
        skip_unowned: bool = False,
        slots: Mapping[str, int] | None = None,
    ) -> list[str]: ...

    def close(self) -> None: ...


Scan = Callable[[set[int]], "dict[int, set[str]] | None"]
"""The keys holding a record in some slots of the status topic (``None``: not read to the end
in time): :meth:`~runtime_adapter.group.status.StatusScanner.live_keys`."""


@dataclass
class _Seen:
    """A connector's latest report as read: its text (compared, so an unchanged report is
    not parsed again), its status and what its record says but ``reporting`` (JSON), and
    when (monotonic) its report was last refreshed."""

    text: str
    status: ConnectorStatus
    record: str
    refreshed_at: float


class StatusRelay:
    """Writes the news of a worker's statuses to the status topic (see the module docstring).

    ``ownership`` gives the worker's current :class:`Ownership` (raising
    :class:`~runtime_adapter.group.NotOwner` when it owns nothing); ``read`` the reports of
    some connectors as their drivers last wrote them, as texts
    (:meth:`~runtime_adapter.store.RedisStore.status_texts`; raising one of
    :data:`~runtime_adapter.store.STORE_ERRORS` when the store cannot answer) that ``parse``
    turns into statuses; ``writer`` makes the fenced writer (a new one after a fatal error);
    ``scan`` reads which keys the status topic holds in the slots to sweep. Thread-safe:
    :meth:`own` is called from the worker's loop, the reads and writes happen
    in the relay's thread.
    """

    def __init__(
        self,
        config: GroupConfig,
        worker_id: str,
        ownership: Callable[[], Ownership],
        read: Callable[[set[str]], Mapping[str, str]],
        parse: Callable[[str], ConnectorStatus] = status_from_text,
        *,
        writer: Callable[[], Writer] | None = None,
        scan: Scan | None = None,
        interval: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.worker_id = worker_id
        self._ownership = ownership
        self._read = read
        self._parse = parse
        self._owned: set[str] = set()
        self._make_writer = writer or (
            lambda: StatusWriter(config, worker_id, timeout=WRITE_TIMEOUT)
        )
        self.write_patience = WRITE_PATIENCE
        self.wedged = 0
        """Writers given up on because a write did not return in :attr:`write_patience`."""
        self.max_wedged = MAX_WEDGED
        self._inside = 0
        """Write calls not returned yet (:meth:`_write`): the wedged ones, between polls."""
        self._inside_lock = threading.Lock()
        self._writer: Writer | None = None
        self._scanner: StatusScanner | None = None
        if scan is None:
            self._scanner = StatusScanner(config, client_id=f"sluice-status-sweep-{worker_id}")
            scan = self._scanner.live_keys
        self._scan = scan
        self._ready: dict[int, frozenset[str]] = {}
        """The slots the worker owns and has read to their end, with their connectors (the
        slots' desired state)."""
        self._slot_by_id: dict[str, int] = {}
        """Connector id → the ready slot holding it: where its record is written (a
        connector the console placed away from its home slot is written where it runs)."""
        self._swept: set[int] = set()
        self._tombstones: set[tuple[str, int]] = set()
        """Keys to remove from the status topic, with their slot: written at the next flush."""
        self.tombstones_written = 0
        self.interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: dict[str, _Seen] = {}
        self._written: dict[str, tuple[str, bool]] = {}
        """Connector id → the record last committed for it: its JSON but ``reporting``, and
        ``reporting``."""
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.outage = Outage(f"runtime worker {worker_id}'s status topic")
        self.store_outage = Outage(f"runtime worker {worker_id}'s status relay: the store")
        self.records_written = 0
        self.refused = 0
        self._vouched_at: float | None = None
        self._capacity: dict[str, Any] | None = None
        """The worker's capacity and load as it last said (:meth:`capacity`)."""
        self._capacity_written: dict[str, Any] | None = None
        """Its part that makes a record due when it changes, as last written."""
        self._vouch_slot: int | None = None
        """The slot of the worker's own record as last written."""

    # -- the worker's side ----------------------------------------------------------------

    def own(self, owned: set[str], slots: Mapping[int, frozenset[str]] | None = None) -> None:
        """The connectors the worker runs now (the slots it owns, claimed); a connector it
        no longer owns is not relayed any more. ``slots``: the slots it owns and has read to
        their end, with all their connectors; one that left a slot still owned was deleted,
        and its record gets a tombstone."""
        with self._lock:
            self._owned = set(owned)
            if slots is None:
                return
            for slot, ids in slots.items():
                for cid in self._ready.get(slot, frozenset()) - ids:
                    self._tombstones.add((cid, slot))  # deleted, or moved to another slot
                # created again in the same slot meanwhile: kept
                self._tombstones -= {
                    (cid, s) for cid, s in self._tombstones if s == slot and cid in ids
                }
            self._ready = dict(slots)
            self._slot_by_id = {cid: slot for slot, ids in slots.items() for cid in ids}
            self._swept &= set(slots)

    def take(self, texts: Mapping[str, str]) -> None:
        """Note the reports read for the owned connectors (parsing only the changed ones);
        those of another worker (a previous owner's, not yet replaced) are not relayed."""
        now = self._clock()
        with self._lock:
            owned = self._owned
            for cid in list(self._seen):
                if cid not in owned:
                    del self._seen[cid]
                    self._written.pop(cid, None)
            for cid in owned:
                text = texts.get(cid)
                seen = self._seen.get(cid)
                if text is None or (seen is not None and seen.text == text):
                    continue
                status = self._parse(text)
                if status.worker_id != self.worker_id:
                    continue
                record = json.dumps(status_record(status), sort_keys=True, default=str)
                refreshed = seen is None or seen.status.updated_at != status.updated_at
                self._seen[cid] = _Seen(
                    text, status, record, now if refreshed or seen is None else seen.refreshed_at
                )

    def poll(self) -> int:
        """Read the owned connectors' statuses (not while the store is away: the reports
        already read age meanwhile), then write what is due (:meth:`flush`)."""
        with self._lock:
            owned = set(self._owned)
        try:
            statuses = self._read(owned) if owned else {}
        except STORE_ERRORS as exc:
            self.store_outage.failed(exc)
        else:
            self.store_outage.over()
            self.take(statuses)
        return self.flush()

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="status-relay", daemon=True)
            self._thread.start()

    def close(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=15)
        if self._writer is not None:
            self._writer.close()
        if self._scanner is not None:
            self._scanner.close()

    # -- the relay's thread ---------------------------------------------------------------

    def due(self) -> dict[str, tuple[dict[str, Any], tuple[str, bool]]]:
        """The records that differ from what was last committed, by connector id: each as
        written (with ``reporting`` and the report's ``updated_at``, the driver host's clock,
        shown by readers) and as compared (without ``updated_at``)."""
        now = self._clock()
        changed: dict[str, tuple[dict[str, Any], tuple[str, bool]]] = {}
        with self._lock:
            for cid, seen in self._seen.items():
                status = seen.status
                interval = status.report_interval
                stale = (
                    status.state in _JUDGED_STATES
                    and interval > 0
                    and now - seen.refreshed_at > 2 * interval - judgement_margin(interval)
                )
                compared = (seen.record, not stale)
                if self._written.get(cid) != compared:
                    record = {
                        **json.loads(seen.record),
                        "reporting": not stale,
                        "updated_at": status.updated_at,
                    }
                    changed[cid] = (record, compared)
        return changed

    def capacity(self, figures: Mapping[str, Any]) -> None:
        """The worker's capacity and load now (its cores, the cores its real-time queries
        hold, its connectors, the host's available memory, whether it is draining), written
        in its own record with the slots it owns: with every vouch, and at once when anything
        but the memory changed (the console places by it: docs/runtime-group.md, "Capacity and
        placement")."""
        with self._lock:
            self._capacity = dict(figures)

    def _capacity_now(self, ownership: Ownership) -> dict[str, Any] | None:
        """The capacity to write, with the slots the worker owns (call with the lock): the
        console moves a connector to one of them."""
        if self._capacity is None:
            return None
        return {**self._capacity, "slots": sorted(ownership.slots)}

    def vouch(
        self, ownership: Ownership, changed: Mapping[str, Mapping[str, Any]]
    ) -> dict[str, Any] | None:
        """The worker's own record when one is due (every half report interval, or at once
        when its capacity changed): the connectors in slots it owns whose record, written
        before or in ``changed`` (the same transaction), says they report, grouped by how
        long ago their driver last refreshed its report (whole seconds, rounded up, by this
        host's monotonic clock: a reader dates their last report that long before it read
        the vouch, comparing no two clocks), and the worker's capacity."""
        now = self._clock()
        with self._lock:
            intervals = [s.status.report_interval for s in self._seen.values()]
            capacity = self._capacity_now(ownership)
            news = capacity is not None and _steady(capacity) != self._capacity_written
        interval = max((i for i in intervals if i > 0), default=0.0)
        if interval <= 0 and not news:
            return None
        due = self._vouched_at is None or now - self._vouched_at >= interval / 2
        if not (due or news):
            return None  # (not due: nothing more is looked at, every 0.5 s)
        with self._lock:
            reporting = {cid: yes for cid, (_, yes) in self._written.items() if cid in self._seen}
            reporting.update((cid, bool(record["reporting"])) for cid, record in changed.items())
            ages = {
                cid: now - self._seen[cid].refreshed_at
                for cid, yes in reporting.items()
                if yes and cid in self._seen and self._slot_of(cid) in ownership.slots
            }
        by_age: dict[str, list[str]] = {}
        for cid, age in sorted(ages.items()):
            by_age.setdefault(str(max(math.ceil(age - 1e-3), 0)), []).append(cid)
        # "at": this host's wall clock, shown as the time of the reports (never compared).
        record: dict[str, Any] = {"ages": by_age, "report_interval": interval, "at": time.time()}
        if capacity is not None:
            record["capacity"] = capacity
        return record

    def sweep(self, ownership: Ownership) -> None:
        """Find what the slots gained since the last sweep hold that they should not: the
        record of a connector their desired state does not hold, another worker's own
        record, or this worker's own record outside the slot it now writes it to. Those get
        a tombstone at the next write (a slot whose topic could not be read is tried again)."""
        with self._lock:
            ready = {s: ids for s, ids in self._ready.items() if s in ownership.slots}
            todo = set(ready) - self._swept
        if not todo:
            return
        live = self._scan(todo)
        if live is None:
            return
        mine = vouch_key(self.worker_id)
        vouch_slot = min(ownership.slots) if ownership.slots else None
        with self._lock:
            for slot, keys in live.items():
                if slot not in self._ready:
                    continue  # let go of meanwhile
                for key in keys:
                    if key.startswith(VOUCH_PREFIX):
                        stale = key != mine or slot != vouch_slot
                    else:
                        # Not in this slot's desired state, and not a connector this worker
                        # runs from this slot: deleted, or moved to another slot.
                        stale = key not in self._ready[slot] and (
                            key not in self._owned or key in self._slot_by_id
                        )
                    if stale:
                        self._tombstones.add((key, slot))
                self._swept.add(slot)

    def flush(self) -> int:
        """Write what is due, and the worker's own record when due, in one fenced
        transaction, with the tombstones due; the connector records written (0 when nothing
        was due, the worker owns nothing, or Kafka refused or did not answer)."""
        changed = self.due()
        try:
            ownership = self._ownership()
        except NotOwner:
            return 0
        self.sweep(ownership)
        records: dict[str, dict[str, Any] | None] = {
            cid: record for cid, (record, _) in changed.items()
        }
        with self._lock:
            slots: dict[str, int] = {cid: self._slot_of(cid) for cid in records}
        vouch = self.vouch(ownership, {c: r for c, (r, _) in changed.items()})
        if vouch is not None:
            key = vouch_key(self.worker_id)
            records[key], slots[key] = vouch, min(ownership.slots)
        with self._lock:
            # Those of slots let go of are not this worker's to write any more.
            self._tombstones = {(k, s) for k, s in self._tombstones if s in ownership.slots}
            pending = sorted(self._tombstones)
        tombstones: set[tuple[str, int]] = set()
        for key, slot in pending:
            if key in records:
                # One record per key and write: the vouch, or a connector's status where it
                # runs now, first; this tombstone (another slot's, or a later one) next time.
                continue
            records[key], slots[key] = None, slot
            tombstones.add((key, slot))
        if not records:
            return 0
        try:
            writer = self._open()
            skipped = set(self._write(writer, ownership, records, slots))
        except StatusRejected as exc:
            # Not a current member (a rebalance under way, or fenced): the group's next
            # generation decides what this worker owns; write it all again then.
            self.refused += 1
            log.info("status write refused (%s); written again once a member", exc)
            with self._lock:
                self._written.clear()
            return 0
        except RuntimeUnavailable as exc:
            self.outage.failed(exc)
            if "fenced for good" in str(exc):
                self._drop_writer()
            return 0
        self.outage.over()
        if vouch is not None:
            self._vouched_at = self._clock()
            if "capacity" in vouch:
                with self._lock:
                    self._capacity_written = _steady(vouch["capacity"])
            moved_from, self._vouch_slot = self._vouch_slot, slots[vouch_key(self.worker_id)]
            if moved_from is not None and moved_from != self._vouch_slot:
                with self._lock:  # the record left in the slot it was written to before
                    self._tombstones.add((vouch_key(self.worker_id), moved_from))
        with self._lock:
            for cid, (_, compared) in changed.items():
                if cid not in skipped:
                    self._written[cid] = compared
            self._tombstones -= tombstones
            for key, _ in tombstones:
                self._written.pop(key, None)
                self.tombstones_written += key not in skipped
        written = len(changed) - len(skipped & changed.keys())
        self.records_written += written
        return written

    def _write(
        self,
        writer: Writer,
        ownership: Ownership,
        records: Mapping[str, Mapping[str, Any] | None],
        slots: Mapping[str, int],
    ) -> list[str]:
        """``writer.write`` in a thread of its own, waited for :attr:`write_patience` seconds;
        past that the writer is given up on (see :data:`WRITE_PATIENCE`) and
        :class:`RuntimeUnavailable` raised: what was due stays due."""
        done = threading.Event()
        outcome: dict[str, Any] = {}

        def call() -> None:
            try:
                skipped = writer.write(ownership, records, skip_unowned=True, slots=slots)
                outcome["skipped"] = skipped
            except BaseException as exc:  # handed to the relay's thread below
                outcome["error"] = exc
            finally:
                with self._inside_lock:
                    self._inside -= 1
                done.set()

        with self._inside_lock:
            self._inside += 1

        threading.Thread(target=call, name="status-write", daemon=True).start()
        if not done.wait(self.write_patience):
            if self._writer is writer:
                self._writer = None  # not closed: its flush would wait on the wedged call
            self.wedged += 1
            log.warning(
                "status write of worker %s did not return in %.0f s: its writer is given up "
                "on, a new one fences it",
                self.worker_id,
                self.write_patience,
            )
            raise RuntimeUnavailable(
                f"status write did not return in {self.write_patience:g} s (writer replaced)"
            )
        if "error" in outcome:
            raise outcome["error"]
        return list(outcome["skipped"])

    def _slot_of(self, connector_id: str) -> int:
        """The slot ``connector_id``'s record goes to (call with the lock held): the ready
        slot holding it, else its home slot."""
        found = self._slot_by_id.get(connector_id)
        return slot_of(connector_id, self.config.slots) if found is None else found

    def wedged_now(self) -> int:
        """Writes given up on that have not returned yet."""
        with self._inside_lock:
            return self._inside

    def _open(self) -> Writer:
        if self._writer is None:
            inside = self.wedged_now()
            if inside >= self.max_wedged:
                raise RuntimeUnavailable(
                    f"{inside} status writes given up on are still inside the Kafka client: "
                    "no new writer until one returns"
                )
            writer = self._make_writer()
            writer.open()
            self._writer = writer
        return self._writer

    def _drop_writer(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            try:
                writer.close()
            except Exception:  # a writer fenced for good may fail to flush: it is dropped
                log.debug("closing a fenced status writer failed", exc_info=True)

    def _run(self) -> None:
        while not self._stopping.wait(self.interval):
            try:
                self.poll()
            except Exception:
                # Never let the thread die: the worker's statuses would freeze in the topic.
                log.exception("relaying statuses failed; trying again")
                self._drop_writer()


def _steady(capacity: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a capacity that makes a worker's record due when it changes: all but the
    available memory, which moves all the time and is written with the next vouch."""
    return {k: v for k, v in capacity.items() if k != "memory_available_mb"}
