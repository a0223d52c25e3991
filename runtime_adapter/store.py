"""The Redis status store: desired connectors, worker heartbeats and observed status.

Layout (``{p}`` is the key prefix, ``sluice`` by default); every value is keyed
by connector id or worker id inside a hash, so one round trip reads them all:

* ``{p}:desired:spec``        connector id → JSON ``{"channel", "revision", "spec"}``
* ``{p}:desired:target``      connector id → target state
* ``{p}:desired:worker``      connector id → assigned worker id ("" = unassigned)
* ``{p}:desired:generation``  connector id → restart generation (an integer)
* ``{p}:desired:offsets``     connector id → JSON :class:`OffsetChange` waiting for the next
  driver (set by the console while the connector is stopped; the driver that applies it
  removes it, only if it is still the one it applied)
* ``{p}:status``              connector id → JSON :class:`ConnectorStatus`
* ``{p}:workers``             worker id → JSON heartbeat
* ``{p}:preview:{connector}`` list of the newest output events (JSON), newest first
* ``{p}:discovery:{connector}`` list of events sampled for schema discovery (JSON), newest
  first, taken (read and emptied) by the console
* ``{p}:deadletters``         connector id → dead letters routed so far (an integer, added
  to by drivers with ``HINCRBY``, so it survives restarts, moves and status rewrites)
* ``{p}:sinkretries``         connector id → sink writes retried so far (the same way)
* ``{p}:placement:{driver}``  connector id → JSON :class:`Placement`: the connectors a runtime
  worker placed in one of its Spark drivers (written by that worker only; the driver runs
  what it finds there)
  and, in its field ``@epoch``, the store's token they were written under
* ``{p}:drivers``             driver id → JSON :class:`DriverInfo` heartbeat (written by the
  driver, removed by its worker when the driver is gone)
* ``{p}:retire``              the ids of drivers their worker asked to stop and exit (a set)
* ``{p}:nudge:{id}``          a list a runtime worker or a driver blocks on between two passes:
  whoever changes what it should do pushes to it, so the change is acted on at once rather
  than at the next pass (the passes stay: a lost nudge only costs that wait)
* ``{p}:epoch``               a token the console sets once the store holds all of its desired
  state (:meth:`RedisStore.set_epoch`). A runtime worker or driver that saw it and then finds
  it gone (the store was emptied: a new Redis, a lost volume) or changed (replaced) holds
  still: it keeps running what it runs and takes nothing away for being absent from the store
  until the console has re-sent its desired state and set the token again
  (:class:`StoreWatch`)
* ``{p}:start``               connector id → JSON ``{"topic": {"partition": offset}}``: where a
  Kafka source whose checkpoint has no batch yet starts, resolved once at its first start
  (so a restart before the first batch does not resolve ``latest`` again and skip events)

Only the console writes ``desired:*`` (a driver only removes the offset change it applied)
and each write touches one field, so
concurrent API calls and reconcile passes never overwrite each other. Drivers
and workers write ``status`` through :meth:`RedisStore.report`, which refuses a
report from a worker or generation that no longer owns the connector: a stale
driver cannot overwrite the status of its successor.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields, replace
from enum import IntEnum
from typing import Any, cast

import redis

from runtime_adapter.base import (
    ConnectorStatus,
    Deployment,
    DriverInfo,
    ExecutorInfo,
    OffsetChange,
    Restoration,
    TaskStatus,
    WorkerInfo,
)
from runtime_adapter.states import State, TargetState

log = logging.getLogger("sluice.store")

_REPORT_IF_OWNER = """
local worker = redis.call('HGET', KEYS[1], ARGV[1])
if not worker then
  return 2
end
local generation = redis.call('HGET', KEYS[2], ARGV[1]) or '0'
if worker ~= ARGV[2] or tostring(generation) ~= ARGV[3] then
  return 0
end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[4])
return 1
"""

EPOCH_FIELD = "@epoch"
"""The field of a driver's placement hash that holds the store's token its worker wrote the
placements under (no connector id starts with ``@``)."""

STORE_ERRORS: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
"""What a store call raises when Redis cannot be reached or answer (a reset connection,
a timeout, a server loading its data)."""


class ReportOutcome(IntEnum):
    """What :meth:`RedisStore.report` did; truthy unless another owner holds the connector."""

    NOT_OWNER = 0
    """Not written: the store names another worker or generation as the owner."""
    WRITTEN = 1
    NO_OWNER = 2
    """Not written: the store holds no owner for the connector (emptied and not re-sent yet,
    or deleted): nobody else owns it either."""


_RESTORE_COUNTS = """
-- KEYS: desired:generation, deadletters, sinkretries; ARGV: connector id, generation,
-- dead letters, sink retries. The generation is only raised; a counter below the console's
-- total lost what it had counted before: it goes on from the total.
local cid = ARGV[1]
local generation = tonumber(redis.call('HGET', KEYS[1], cid) or '-1')
if generation < tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[1], cid, ARGV[2])
end
for index = 2, 3 do
  local total = tonumber(ARGV[index + 1])
  if tonumber(redis.call('HGET', KEYS[index], cid) or '0') < total then
    redis.call('HINCRBY', KEYS[index], cid, total)
  end
end
return 1
"""


_DELETE_IF_SAME = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
"""


@dataclass(frozen=True)
class Placement:
    """A connector placed in a driver: the generation and revision the driver is to run.

    ``placed_at`` tells two placements of the same generation and revision apart (stopped,
    then started again): a driver runs each placement once.
    """

    generation: int
    revision: int
    placed_at: float = 0.0
    quarantine: str = ""
    """Why the connector runs in a driver of its own although its spec shares one (its
    tasks brought down or overfilled shared drivers: :mod:`runtime_adapter.host.crashes`);
    its driver reports it as the connector's reason. Empty otherwise."""


def offset_change_token(raw: str) -> str:
    """A short name of a pending offset change's stored text (:attr:`Deployment.offset_change`)."""
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def status_to_json(status: ConnectorStatus) -> str:
    return json.dumps(asdict(status), default=str)


def _report_args(status: ConnectorStatus) -> list[str]:
    """The arguments of the report script (``_REPORT_IF_OWNER``) for ``status``."""
    return [
        status.connector_id,
        status.worker_id or "",
        str(status.generation),
        status_to_json(status),
    ]


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without the keys dataclass ``cls`` lacks: written by a newer driver or worker
    (a cluster is upgraded one process at a time), they must not break an older reader."""
    names = {f.name for f in fields(cls)}
    return {key: value for key, value in data.items() if key in names}


def _text(raw: str | bytes) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


def status_from_text(text: str) -> ConnectorStatus:
    """A status as :meth:`RedisStore.status_texts` gives it: its counts, then its JSON."""
    dead_letters, sink_retries, raw = text.split(" ", 2)
    return replace(
        status_from_json(raw), dead_letters=int(dead_letters), sink_retries=int(sink_retries)
    )


def status_from_json(raw: str | bytes) -> ConnectorStatus:
    """A status as :func:`status_to_json` wrote it; a report written before a field existed
    reads with that field's default, one with a field this code does not know without it."""
    data = json.loads(raw)
    tasks = [
        TaskStatus(**_known(TaskStatus, {**task, "state": State(task["state"])}))
        for task in data.pop("tasks", [])
    ]
    executors = [
        ExecutorInfo(**_known(ExecutorInfo, executor))
        for executor in data.pop("executors", None) or []
    ]
    return ConnectorStatus(
        **_known(
            ConnectorStatus,
            {**data, "state": State(data["state"]), "tasks": tasks, "executors": executors},
        )
    )


class StoreWatch:
    """Whether the store has lost the desired state this process saw (see ``{p}:epoch``).

    :meth:`lost` is given the token read this pass: True while it is missing after one was
    seen (the store was emptied and the console has not re-sent its desired state yet); False
    otherwise, also when no token was ever seen (a store no console has filled, as in tests
    of the runtime alone). A token that reappears, the same or another, is the console's
    word that the desired state is complete again.
    """

    def __init__(self) -> None:
        self.known: str | None = None
        self.holding = False

    def lost(self, epoch: str | None) -> bool:
        if epoch is not None:
            self.known = epoch
            return False
        return self.known is not None

    def holds(self, epoch: str | None, waiting: bool = False) -> bool:
        """Whether the process holds still this pass: the store :meth:`lost` its desired
        state, or ``waiting`` (for what its own writer must put back first); each change
        is logged once."""
        holding = self.lost(epoch) or waiting
        if holding != self.holding:
            self.holding = holding
            if holding:
                log.warning("the store lost its desired state: holding still until it is re-sent")
            else:
                log.info("the store's desired state is back: converging again")
        return holding


class Outage:
    """How long a process has been unable to use the store, said in its log without flooding
    it: the first failure, then every :attr:`every` seconds, then its end (monotonic clock)."""

    every = 30.0

    def __init__(self, what: str) -> None:
        self.what = what
        self.since: float | None = None
        self.said_at = 0.0

    def failed(self, why: object) -> None:
        now = time.monotonic()
        if self.since is None:
            self.since = now
        if now - self.said_at >= self.every:
            self.said_at = now
            log.warning(
                "%s: the store is unavailable for %.0f s, what runs keeps running: %s",
                self.what,
                now - self.since,
                why,
            )

    def over(self) -> float | None:
        """End the outage, if any; the monotonic time it ended at (None if there was none)."""
        if self.since is None:
            return None
        now = time.monotonic()
        log.info("%s: the store answers again after %.0f s", self.what, now - self.since)
        self.since, self.said_at = None, 0.0
        return now


class RedisStore:
    """Typed access to the runtime's Redis keys.

    Its client decodes replies (``decode_responses=True``, :meth:`from_url`): Redis answers
    ``str``, where redis-py's types say ``bytes | str`` (the casts below).
    """

    def __init__(self, client: redis.Redis, prefix: str = "sluice") -> None:
        self.redis = client
        self.prefix = prefix
        self._report_script = client.register_script(_REPORT_IF_OWNER)
        self._delete_if_same_script = client.register_script(_DELETE_IF_SAME)
        self._restore_counts_script = client.register_script(_RESTORE_COUNTS)

    @classmethod
    def from_url(cls, url: str, prefix: str = "sluice") -> RedisStore:
        client = redis.Redis.from_url(
            url, decode_responses=True, socket_timeout=5, socket_connect_timeout=5
        )
        return cls(client, prefix)

    def key(self, name: str) -> str:
        return f"{self.prefix}:{name}"

    # -- desired state (written by the console through the adapter) -------------------------

    def put_deployment(self, deployment: Deployment, pipe: Any = None) -> None:
        """Write the desired connector; with ``pipe`` (a pipeline), only queue the writes."""
        definition = {
            "channel": deployment.channel,
            "revision": deployment.revision,
            "spec": deployment.spec,
            "checkpoint": deployment.checkpoint,
        }
        if deployment.run is not None:
            definition["run"] = deployment.run
        if deployment.discovery:
            definition["discovery"] = True
        if deployment.slot is not None:
            definition["slot"] = deployment.slot
        if deployment.team:
            definition["team"] = deployment.team
        if deployment.policy is not None:
            definition["policy"] = deployment.policy
        cid = deployment.connector_id
        queued = pipe is not None
        if pipe is None:
            pipe = self.redis.pipeline()
        pipe.hset(self.key("desired:spec"), cid, json.dumps(definition))
        pipe.hset(self.key("desired:target"), cid, str(deployment.target_state))
        if deployment.worker_id is not None:
            pipe.hset(self.key("desired:worker"), cid, deployment.worker_id)
        else:
            pipe.hsetnx(self.key("desired:worker"), cid, "")
        pipe.hsetnx(self.key("desired:generation"), cid, 0)
        if not queued:
            pipe.execute()

    def epoch(self) -> str | None:
        """The token the console set once the store held all of its desired state."""
        return cast("str | None", self.redis.get(self.key("epoch")))

    def set_epoch(self, token: str) -> None:
        """Say that the store now holds all of the console's desired state (after a re-send)."""
        self.redis.set(self.key("epoch"), token)

    def set_target(self, connector_id: str, target: TargetState) -> None:
        self.redis.hset(self.key("desired:target"), connector_id, str(target))

    def assign(self, connector_id: str, worker_id: str | None) -> None:
        """Assign the connector; a change of worker drops the previous worker's status."""
        new = worker_id or ""
        old = self.redis.hget(self.key("desired:worker"), connector_id)
        pipe = self.redis.pipeline()
        pipe.hset(self.key("desired:worker"), connector_id, new)
        if old != new:
            pipe.hdel(self.key("status"), connector_id)
        pipe.execute()

    def set_draining(self, worker_ids: Iterable[str]) -> None:
        """Replace the set of workers the console drains (when the group places channels)."""
        pipe = self.redis.pipeline()
        pipe.delete(self.key("draining"))
        ids = sorted(worker_ids)
        if ids:
            pipe.sadd(self.key("draining"), *ids)
        pipe.execute()

    def draining(self) -> set[str]:
        return cast("set[str]", self.redis.smembers(self.key("draining")))

    def assign_many(self, connector_ids: list[str], worker_id: str) -> None:
        """:meth:`assign` of many connectors to one worker, in two round trips."""
        if not connector_ids:
            return
        old = cast("list[str | None]", self.redis.hmget(self.key("desired:worker"), connector_ids))
        pipe = self.redis.pipeline()
        pipe.hset(self.key("desired:worker"), mapping=dict.fromkeys(connector_ids, worker_id))
        moved = [cid for cid, was in zip(connector_ids, old, strict=True) if was != worker_id]
        if moved:
            pipe.hdel(self.key("status"), *moved)
        pipe.execute()

    def owners(self, connector_ids: Iterable[str]) -> dict[str, str | None]:
        """The worker each of ``connector_ids`` is assigned to (None: no worker), in one round
        trip; unknown ids are absent."""
        ids = list(connector_ids)
        if not ids:
            return {}
        workers = cast("list[str | None]", self.redis.hmget(self.key("desired:worker"), ids))
        return {
            cid: worker or None
            for cid, worker in zip(ids, workers, strict=True)
            if worker is not None
        }

    def bump_generation(self, connector_id: str) -> int:
        return int(self.redis.hincrby(self.key("desired:generation"), connector_id, 1))

    def delete(self, connector_id: str) -> None:
        self.delete_many([connector_id])

    def delete_many(self, connector_ids: list[str]) -> None:
        """Forget every key of ``connector_ids`` in one round trip."""
        if not connector_ids:
            return
        pipe = self.redis.pipeline()
        for name in (
            "desired:spec",
            "desired:target",
            "desired:worker",
            "desired:generation",
            "status",
            "deadletters",
            "sinkretries",
            "desired:offsets",
            "start",
        ):
            pipe.hdel(self.key(name), *connector_ids)
        pipe.delete(
            *(
                self.key(f"{kind}:{cid}")
                for cid in connector_ids
                for kind in ("preview", "discovery")
            )
        )
        pipe.execute()

    def deployments(self) -> dict[str, Deployment]:
        """Every desired connector, read in one round trip."""
        pipe = self.redis.pipeline()
        for name in ("desired:spec", "desired:target", "desired:worker", "desired:generation"):
            pipe.hgetall(self.key(name))
        specs, targets, workers, generations = pipe.execute()
        result: dict[str, Deployment] = {}
        for cid, raw in specs.items():
            definition = json.loads(raw)
            result[cid] = Deployment(
                connector_id=cid,
                channel=definition["channel"],
                revision=int(definition["revision"]),
                spec=definition["spec"],
                target_state=TargetState(targets.get(cid, TargetState.STOPPED)),
                worker_id=workers.get(cid) or None,
                generation=int(generations.get(cid, 0)),
                checkpoint=definition.get("checkpoint", ""),
                run=definition.get("run"),
                discovery=bool(definition.get("discovery", False)),
                slot=definition.get("slot"),
                team=definition.get("team", ""),
                policy=definition.get("policy"),
            )
        return result

    def targets_of(self, connector_ids: Iterable[str]) -> dict[str, TargetState]:
        """The target state of each of ``connector_ids`` in one round trip (unknown ids are
        absent): what a driver reads every pass of the connectors it hosts."""
        ids = list(connector_ids)
        if not ids:
            return {}
        targets = cast("list[str | None]", self.redis.hmget(self.key("desired:target"), ids))
        return {cid: TargetState(t) for cid, t in zip(ids, targets, strict=True) if t}

    def deployment(self, connector_id: str) -> Deployment | None:
        return self.deployments_of([connector_id]).get(connector_id)

    def deployments_of(self, connector_ids: Iterable[str]) -> dict[str, Deployment]:
        """The desired connectors among ``connector_ids``, in one round trip (unknown ids,
        deleted ones, are absent)."""
        ids = list(connector_ids)
        if not ids:
            return {}
        pipe = self.redis.pipeline()
        for name in ("desired:spec", "desired:target", "desired:worker", "desired:generation"):
            pipe.hmget(self.key(name), ids)
        specs, targets, workers, generations = pipe.execute()
        result: dict[str, Deployment] = {}
        for cid, raw, target, worker, generation in zip(
            ids, specs, targets, workers, generations, strict=True
        ):
            if raw is None:
                continue
            definition = json.loads(raw)
            result[cid] = Deployment(
                connector_id=cid,
                channel=definition["channel"],
                revision=int(definition["revision"]),
                spec=definition["spec"],
                target_state=TargetState(target or TargetState.STOPPED),
                worker_id=worker or None,
                generation=int(generation or 0),
                checkpoint=definition.get("checkpoint", ""),
                run=definition.get("run"),
                discovery=bool(definition.get("discovery", False)),
                slot=definition.get("slot"),
                team=definition.get("team", ""),
                policy=definition.get("policy"),
            )
        return result

    # -- offset changes (set by the console, applied by the next driver) ----------------------

    def put_offset_change(self, connector_id: str, change: OffsetChange) -> None:
        """Wait for the connector's next driver to apply ``change`` (replacing any earlier one)."""
        self.redis.hset(
            self.key("desired:offsets"), connector_id, json.dumps(change.to_json(), sort_keys=True)
        )

    def offset_change(self, connector_id: str) -> tuple[OffsetChange, str] | None:
        """The pending change and its stored text (for :meth:`clear_offset_change`), if any."""
        raw = cast("str | None", self.redis.hget(self.key("desired:offsets"), connector_id))
        if raw is None:
            return None
        return OffsetChange.from_json(json.loads(raw)), raw

    def offset_change_tokens(self, connector_ids: Iterable[str]) -> dict[str, str]:
        """The token of each pending offset change among ``connector_ids``, in one round trip."""
        ids = list(connector_ids)
        if not ids:
            return {}
        raw = cast("list[str | None]", self.redis.hmget(self.key("desired:offsets"), ids))
        return {cid: offset_change_token(r) for cid, r in zip(ids, raw, strict=True) if r}

    def clear_offset_change(self, connector_id: str, applied: str) -> bool:
        """Remove the pending change if it is still ``applied`` (a newer one is kept)."""
        removed = self._delete_if_same_script(
            keys=[self.key("desired:offsets")], args=[connector_id, applied]
        )
        return bool(removed)

    # -- observed status (written by drivers and workers) -----------------------------------

    def report(self, status: ConnectorStatus) -> ReportOutcome:
        """Write ``status`` if its worker and generation still own the connector.

        Falsy (:attr:`ReportOutcome.NOT_OWNER`, nothing written) for a report from a stale
        owner; :attr:`ReportOutcome.NO_OWNER` when the store names no owner at all.
        """
        stamped = replace(status, updated_at=time.time())
        written = self._report_script(keys=self._report_keys(), args=_report_args(stamped))
        return ReportOutcome(int(written))

    def report_many(self, statuses: list[ConnectorStatus]) -> list[ReportOutcome]:
        """:meth:`report` for many connectors, each checked on its own, in one pipeline (two
        round trips: redis-py checks the script is loaded first); the outcomes in the order
        of ``statuses``."""
        if not statuses:
            return []
        at = time.time()
        pipe = self.redis.pipeline(transaction=False)
        for status in statuses:
            self._report_script(
                keys=self._report_keys(),
                args=_report_args(replace(status, updated_at=at)),
                client=pipe,
            )
        return [ReportOutcome(int(written)) for written in pipe.execute()]

    def _report_keys(self) -> list[str]:
        return [self.key("desired:worker"), self.key("desired:generation"), self.key("status")]

    def force_status(self, status: ConnectorStatus) -> None:
        """Write ``status`` unconditionally (the console's own view, e.g. RESTARTING)."""
        self.force_statuses([status])

    def force_statuses(self, statuses: list[ConnectorStatus]) -> None:
        """:meth:`force_status` for many connectors in one round trip."""
        if not statuses:
            return
        at = time.time()
        self.redis.hset(
            self.key("status"),
            mapping={s.connector_id: status_to_json(replace(s, updated_at=at)) for s in statuses},
        )

    def statuses(self, connector_ids: Iterable[str]) -> dict[str, ConnectorStatus]:
        return {cid: status_from_text(t) for cid, t in self.status_texts(connector_ids).items()}

    def status_texts(self, connector_ids: Iterable[str]) -> dict[str, str]:
        """Each connector's status as stored, with its counts: a text that tells a new report
        from one already read without parsing it (:func:`status_from_text` parses it)."""
        ids = list(connector_ids)
        if not ids:
            return {}
        pipe = self.redis.pipeline()
        pipe.hmget(self.key("status"), ids)
        pipe.hmget(self.key("deadletters"), ids)
        pipe.hmget(self.key("sinkretries"), ids)
        values, dead_letters, retries = pipe.execute()
        return {
            cid: f"{int(dead or 0)} {int(retried or 0)} {_text(raw)}"
            for cid, raw, dead, retried in zip(ids, values, dead_letters, retries, strict=True)
            if raw
        }

    def counts(self, connector_ids: Iterable[str]) -> dict[str, tuple[int, int]]:
        """Each connector's dead letters and sink retries so far, in one round trip."""
        ids = list(connector_ids)
        if not ids:
            return {}
        pipe = self.redis.pipeline()
        pipe.hmget(self.key("deadletters"), ids)
        pipe.hmget(self.key("sinkretries"), ids)
        dead_letters, retries = pipe.execute()
        return {
            cid: (int(dead or 0), int(retried or 0))
            for cid, dead, retried in zip(ids, dead_letters, retries, strict=True)
        }

    def add_dead_letters(self, connector_id: str, count: int) -> None:
        """Count ``count`` more dead letters routed by the connector's driver."""
        self.redis.hincrby(self.key("deadletters"), connector_id, count)

    def add_sink_retries(self, connector_id: str, count: int) -> None:
        """Count ``count`` more sink writes retried by the connector's driver."""
        self.redis.hincrby(self.key("sinkretries"), connector_id, count)

    # -- preview (the live tail of a channel's output) -----------------------------------------

    def publish_preview(self, connector_id: str, events: list[dict[str, Any]], keep: int) -> None:
        """Add ``events`` (oldest first) to the connector's tail, keeping the newest ``keep``."""
        if not events:
            return
        key = self.key(f"preview:{connector_id}")
        pipe = self.redis.pipeline()
        pipe.lpush(key, *(json.dumps(event, default=str) for event in events))
        pipe.ltrim(key, 0, max(keep, 1) - 1)
        pipe.execute()

    def preview(self, connector_id: str, limit: int) -> list[dict[str, Any]]:
        """The newest ``limit`` events of the connector's tail, newest first."""
        raw = self.redis.lrange(self.key(f"preview:{connector_id}"), 0, max(limit, 1) - 1)
        return [json.loads(item) for item in raw]

    # -- schema discovery (events sampled by a driver, taken by the console) -----------------

    def publish_samples(self, connector_id: str, events: list[dict[str, Any]], keep: int) -> None:
        """Add sampled ``events`` to the connector's discovery list, keeping the newest
        ``keep`` (the console takes them every few seconds: the list stays short)."""
        if not events:
            return
        key = self.key(f"discovery:{connector_id}")
        pipe = self.redis.pipeline()
        pipe.lpush(key, *(json.dumps(event, default=str) for event in events))
        pipe.ltrim(key, 0, max(keep, 1) - 1)
        pipe.execute()

    def take_samples(self, connector_ids: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
        """The sampled events of each connector (oldest first), removed from the store, in
        one round trip (a transaction: a sample published meanwhile is taken next time)."""
        ids = list(connector_ids)
        if not ids:
            return {}
        pipe = self.redis.pipeline(transaction=True)
        for cid in ids:
            pipe.lrange(self.key(f"discovery:{cid}"), 0, -1)
            pipe.delete(self.key(f"discovery:{cid}"))
        replies = pipe.execute()
        taken: dict[str, list[dict[str, Any]]] = {}
        for index, cid in enumerate(ids):
            raw = replies[2 * index]
            if raw:
                taken[cid] = [json.loads(item) for item in reversed(raw)]
        return taken

    # -- starting positions (resolved once, at a connector's first start) --------------------

    def start_position(self, connector_id: str) -> dict[str, dict[str, int]] | None:
        raw = self.redis.hget(self.key("start"), connector_id)
        return json.loads(raw) if raw else None

    def put_start_position(self, connector_id: str, offsets: dict[str, dict[str, int]]) -> None:
        self.redis.hset(self.key("start"), connector_id, json.dumps(offsets, sort_keys=True))

    def clear_start_position(self, connector_id: str) -> None:
        self.redis.hdel(self.key("start"), connector_id)

    # -- placements (a worker's connectors in its drivers) ------------------------------------

    def place(
        self, driver_id: str, connector_id: str, placement: Placement, epoch: str | None = None
    ) -> None:
        """Place a connector in a driver; ``epoch`` is the store's token the worker placed
        it under (see :meth:`placed_under`)."""
        mapping: dict[Any, Any] = {connector_id: json.dumps(asdict(placement))}
        if epoch is not None:
            mapping[EPOCH_FIELD] = epoch
        self.redis.hset(self.key(f"placement:{driver_id}"), mapping=mapping)

    def placed_under(self, driver_id: str) -> str | None:
        """The store's token under which the driver's worker last wrote its placements: a
        driver acts on them only when it is the store's current one (else its worker has not
        written them back yet after the store was emptied or replaced)."""
        return cast("str | None", self.redis.hget(self.key(f"placement:{driver_id}"), EPOCH_FIELD))

    def mark_placements(self, driver_id: str, epoch: str) -> None:
        """Say that the driver's placements in the store are complete under ``epoch``."""
        self.redis.hset(self.key(f"placement:{driver_id}"), EPOCH_FIELD, epoch)

    def unplace(self, driver_id: str, connector_id: str) -> None:
        self.redis.hdel(self.key(f"placement:{driver_id}"), connector_id)

    def placements(self, driver_id: str) -> dict[str, Placement]:
        raw = cast("dict[str, str]", self.redis.hgetall(self.key(f"placement:{driver_id}")))
        return {
            cid: Placement(**_known(Placement, json.loads(v)))
            for cid, v in raw.items()
            if cid != EPOCH_FIELD
        }

    def placed_deployments(
        self, driver_id: str
    ) -> tuple[dict[str, Placement], dict[str, Deployment]]:
        """A driver's placements and their connectors' desired state, in two round trips."""
        placements = self.placements(driver_id)
        return placements, self.deployments_of(placements)

    # -- nudges (act now, not at the next pass) -----------------------------------------------

    def nudge(self, *ids: str | None) -> None:
        """Wake the runtime workers or drivers ``ids`` (``None`` ids are skipped)."""
        wanted = [i for i in ids if i]
        if not wanted:
            return
        pipe = self.redis.pipeline()
        for target in wanted:
            key = self.key(f"nudge:{target}")
            pipe.rpush(key, 1)
            pipe.expire(key, 60)  # nobody waits on it any more: gone by itself
        pipe.execute()

    def wait_nudge(self, target: str, timeout: float) -> bool:
        """Block until ``target`` is nudged or ``timeout`` seconds pass; True when nudged.

        Nudges that piled up are taken together: one pass acts on them all."""
        if timeout <= 0:
            return False
        key = self.key(f"nudge:{target}")
        found = self.redis.blpop([key], timeout=max(timeout, 0.01))
        if found is not None:
            self.redis.delete(key)
        return found is not None

    # -- drivers -----------------------------------------------------------------------------

    def driver_heartbeat(self, info: DriverInfo) -> None:
        self.redis.hset(self.key("drivers"), info.driver_id, json.dumps(asdict(info)))

    def drivers(self) -> list[DriverInfo]:
        raw = cast("dict[str, str]", self.redis.hgetall(self.key("drivers")))
        return [DriverInfo(**_known(DriverInfo, json.loads(value))) for value in raw.values()]

    def forget_driver(self, driver_id: str) -> None:
        """Drop a driver that is gone: its heartbeat, its placements, its retirement."""
        pipe = self.redis.pipeline()
        pipe.hdel(self.key("drivers"), driver_id)
        pipe.delete(self.key(f"placement:{driver_id}"))
        pipe.srem(self.key("retire"), driver_id)
        pipe.execute()

    def retire(self, driver_id: str) -> None:
        """Ask a driver to stop its queries and exit."""
        self.redis.sadd(self.key("retire"), driver_id)

    def retired(self, driver_id: str) -> bool:
        return bool(self.redis.sismember(self.key("retire"), driver_id))

    # -- workers -----------------------------------------------------------------------------

    def heartbeat(self, info: WorkerInfo) -> None:
        self.redis.hset(self.key("workers"), info.worker_id, json.dumps(asdict(info)))

    def workers(self) -> list[WorkerInfo]:
        raw = cast("dict[str, str]", self.redis.hgetall(self.key("workers")))
        return [WorkerInfo(**_known(WorkerInfo, json.loads(value))) for value in raw.values()]

    def forget_worker(self, worker_id: str) -> None:
        """Drop a worker's heartbeat and what its drivers left (their heartbeats, placements
        and retirements): a dead worker never cleans up after itself."""
        drivers = [d.driver_id for d in self.drivers() if d.worker_id == worker_id]
        pipe = self.redis.pipeline()
        pipe.hdel(self.key("workers"), worker_id)
        for driver_id in drivers:
            pipe.hdel(self.key("drivers"), driver_id)
            pipe.delete(self.key(f"placement:{driver_id}"))
            pipe.srem(self.key("retire"), driver_id)
        pipe.execute()

    # -- re-sending what the store lost (written for the console's control loop; kept apart) ---

    _WHOLE = ("desired:spec", "desired:target", "desired:worker", "desired:generation")
    """The hashes that together hold a connector's desired state."""

    def desired_summary(self) -> tuple[str | None, int]:
        """The epoch token and how many connectors the store holds whole (in each of
        :attr:`_WHOLE`), in one round trip."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.get(self.key("epoch"))
        for name in self._WHOLE:
            pipe.hlen(self.key(name))
        epoch, *counts = pipe.execute()
        return epoch, min(int(count) for count in counts)

    def desired_ids(self) -> set[str]:
        """The connectors whose desired state the store holds whole, in one round trip."""
        pipe = self.redis.pipeline(transaction=False)
        for name in self._WHOLE:
            pipe.hkeys(self.key(name))
        first, *others = pipe.execute()
        whole = set(first)
        for ids in others:
            whole &= set(ids)
        return whole

    def restore(self, restorations: list[Restoration]) -> None:
        """Give back the desired state of connectors the store lost, in one transaction (one
        round trip), filling in only what is missing: each definition, target and worker as
        :meth:`put_deployment` writes them where the store has none (one the console wrote
        since the loss is newer and stays), the generation raised (never lowered) to the
        console's, each counter going on from the console's total when the store's is below
        it (it lost what it had counted). A transaction, so that no driver's report is
        accepted (its worker is back) before its counters are."""
        if not restorations:
            return
        pipe = self.redis.pipeline(transaction=True)
        counts = [self.key(name) for name in ("desired:generation", "deadletters", "sinkretries")]
        for restoration in restorations:
            deployment = restoration.deployment
            self._restore_counts_script(
                keys=counts,
                args=[
                    deployment.connector_id,
                    deployment.generation,
                    restoration.dead_letters,
                    restoration.sink_retries,
                ],
                client=pipe,
            )
            self.put_deployment(deployment, pipe=_FillingIn(pipe))
        pipe.execute()


class _FillingIn:
    """A pipeline through which :meth:`RedisStore.put_deployment` writes a field only where the
    store has none (``HSETNX`` for its ``HSET``): :meth:`RedisStore.restore` re-sends exactly
    what a deploy sends without overwriting what the console wrote since the loss."""

    def __init__(self, pipe: Any) -> None:
        self.pipe = pipe

    def hset(self, key: str, field: str, value: Any) -> None:
        self.pipe.hsetnx(key, field, value)

    def hsetnx(self, key: str, field: str, value: Any) -> None:
        self.pipe.hsetnx(key, field, value)
