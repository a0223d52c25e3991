"""Runtime-group test support: a recording slot listener, a broker whose second listener sits
behind a cuttable TCP proxy, and a group member in a process of its own
(``python -m tests.support.runtime_group CONFIG_JSON``) that a test can ``kill -9``,
``SIGSTOP`` and drive over stdin.

Every time here is ``time.monotonic()`` (``CLOCK_MONOTONIC``, one clock for every process of
the host), so events of a test and of its member processes can be put in one order.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime_adapter.base import Deployment
from runtime_adapter.group import (
    GroupConfig,
    GroupMember,
    NotOwner,
    StatusRejected,
    StatusWriter,
    StopReason,
    slot_of,
)
from tests.support.processes import (
    REPO_ROOT,
    Service,
    free_port,
    port_open,
    start_service,
    wait_until,
)


@dataclass
class Step:
    at: float
    kind: str
    slots: frozenset[int] = frozenset()
    detail: str = ""


@dataclass
class RecordingListener:
    """A :class:`~runtime_adapter.group.SlotListener` that records what it is told and keeps
    the connectors of its ready slots; ``stop_delay`` seconds pass in every stop (a channel
    taking its time to stop)."""

    slots: int = 64
    """The runtime's slots (to tell which connectors a stopped slot held)."""
    stop_delay: float = 0.0
    steps: list[Step] = field(default_factory=list)
    deployments: dict[str, Deployment] = field(default_factory=dict)
    running: set[int] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _step(self, kind: str, slots: frozenset[int] = frozenset(), detail: str = "") -> None:
        with self.lock:
            self.steps.append(Step(time.monotonic(), kind, slots, detail))

    def slots_assigned(self, slots: frozenset[int]) -> None:
        with self.lock:
            self.running |= slots
        self._step("assigned", slots)

    def slot_ready(self, slot: int, deployments: Mapping[str, Deployment]) -> None:
        with self.lock:
            self.deployments.update(deployments)
        self._step("ready", frozenset({slot}))

    def desired_changed(self, slot: int, connector_id: str, deployment: Deployment | None) -> None:
        with self.lock:
            if deployment is None:
                self.deployments.pop(connector_id, None)
            else:
                self.deployments[connector_id] = deployment
        self._step("changed", frozenset({slot}), connector_id)

    def stop_slots(self, slots: frozenset[int], reason: StopReason) -> None:
        self._step("stopping", slots, str(reason))
        time.sleep(self.stop_delay)
        with self.lock:
            self.running -= slots
            for connector_id in [
                cid for cid in self.deployments if slot_of(cid, self.slots) in slots
            ]:
                self.deployments.pop(connector_id)
        self._step("stopped", slots, str(reason))

    def first(
        self, kind: str, slot: int, detail: str | None = None, after: float = float("-inf")
    ) -> Step | None:
        """The first step of ``kind`` naming ``slot`` (and ``detail``, if given) recorded
        after the monotonic instant ``after``."""
        with self.lock:
            return next(
                (
                    s
                    for s in self.steps
                    if s.kind == kind
                    and slot in s.slots
                    and detail in (None, s.detail)
                    and s.at > after
                ),
                None,
            )


def recording_member(
    config: GroupConfig, worker_id: str, stop_delay: float = 0.0
) -> tuple[GroupMember, RecordingListener]:
    listener = RecordingListener(stop_delay=stop_delay, slots=config.slots)
    return GroupMember(config, worker_id, listener), listener


# -- a broker with a cuttable listener ------------------------------------------------------


@dataclass
class GroupBroker:
    """A KRaft broker with two client listeners: ``bootstrap`` direct, and ``cut_bootstrap``
    through :attr:`proxy` (its metadata names the proxy, so every connection of a client
    bootstrapped there passes the proxy and :meth:`TcpProxy.down` cuts them all)."""

    service: Service
    bootstrap: str
    cut_bootstrap: str
    proxy: Any


def start_group_broker(data_dir: Path, log_dir: Path) -> GroupBroker:
    from tests.support.tcp_proxy import TcpProxy

    port, cut_port, controller = free_port(), free_port(), free_port()
    proxy = TcpProxy(cut_port)
    host = "127.0.0.1"
    overrides = {
        "listeners": f"PLAINTEXT://{host}:{port},CUT://{host}:{cut_port},"
        f"CONTROLLER://{host}:{controller}",
        "advertised.listeners": f"PLAINTEXT://{host}:{port},CUT://{host}:{proxy.port},"
        f"CONTROLLER://{host}:{controller}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CUT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    }
    command = ["bash", "scripts/kafka.sh"]
    for key, value in overrides.items():
        command += ["--override", f"{key}={value}"]
    service = start_service(
        "kafka-group",
        command,
        log_dir,
        {
            "KAFKA_PORT": str(port),
            "KAFKA_CONTROLLER_PORT": str(controller),
            "KAFKA_DATA_DIR": str(data_dir),
        },
    )
    bootstrap = f"{host}:{port}"

    def ready() -> bool:
        if not service.alive():
            raise RuntimeError(f"kafka exited:\n{service.log_tail()}")
        if not port_open(port):
            return False
        from confluent_kafka.admin import AdminClient

        AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=2)
        return True

    wait_until(ready, 120, interval=1.0, what=f"kafka on {bootstrap}")
    return GroupBroker(service, bootstrap, f"{host}:{proxy.port}", proxy)


# -- a member in a process of its own ----------------------------------------------------------


class MemberProcess:
    """``python -m tests.support.runtime_group`` as a child: its steps arrive as JSON lines
    on :attr:`steps`; :meth:`send` writes one command line to it."""

    def __init__(self, config: GroupConfig, worker_id: str, log_dir: Path) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self.stderr = (log_dir / f"member-{worker_id}.log").open("ab")
        payload = json.dumps({"config": dataclasses.asdict(config), "worker_id": worker_id})
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.runtime_group", payload],
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            bufsize=1,
        )
        self.steps: list[dict[str, Any]] = []
        self._new: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            step = json.loads(line)
            self.steps.append(step)
            self._new.put(step)

    def send(self, command: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def wait_for(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float
    ) -> dict[str, Any]:
        found = wait_until(
            lambda: next((s for s in self.steps if predicate(s)), None), timeout, 0.05
        )
        assert isinstance(found, dict)
        return found

    def owned(self) -> set[int]:
        owned: set[int] = set()
        for step in self.steps:
            if step["kind"] == "assigned":
                owned |= set(step["slots"])
            elif step["kind"] in ("stopped",):
                owned -= set(step["slots"])
        return owned

    def signal(self, number: int) -> None:
        os.kill(self.process.pid, number)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.signal(signal.SIGCONT)
            self.process.kill()
        self.process.wait(10)
        self.stderr.close()


def _member_main(payload: str) -> None:
    """The child: a member whose listener prints its steps, writing statuses on command.

    Commands (stdin, one a line): ``capture`` takes an ownership snapshot (a write that has
    passed the local check); ``write-captured ID`` writes ``ID``'s status with it;
    ``write ID`` writes with a fresh one; ``exit`` closes the member.
    """
    import logging

    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    data = json.loads(payload)
    config = GroupConfig(**data["config"])
    worker_id = data["worker_id"]
    out_lock = threading.Lock()

    def emit(kind: str, **fields: Any) -> None:
        with out_lock:
            print(json.dumps({"at": time.monotonic(), "kind": kind, **fields}), flush=True)

    class Printing(RecordingListener):
        def _step(self, kind: str, slots: frozenset[int] = frozenset(), detail: str = "") -> None:
            emit(kind, slots=sorted(slots), detail=detail)

    member = GroupMember(config, worker_id, Printing(slots=config.slots))
    writer = StatusWriter(config, worker_id)
    writer.open()
    member.start()
    captured = None
    for line in sys.stdin:
        command, _, argument = line.strip().partition(" ")
        try:
            if command == "capture":
                captured = member.ownership()
                emit("captured", generation=captured.generation, slots=sorted(captured.slots))
            elif command in ("write", "write-captured"):
                ownership = captured if command == "write-captured" else member.ownership()
                assert ownership is not None
                writer.write(ownership, {argument: {"state": "RUNNING", "by": worker_id}})
                emit("written", connector=argument, generation=ownership.generation)
            elif command == "exit":
                break
        except StatusRejected as exc:
            emit("rejected", connector=argument, detail=str(exc), code=exc.code)
        except NotOwner as exc:
            emit("not-owner", connector=argument, detail=str(exc))
        except Exception as exc:
            emit("error", connector=argument, detail=repr(exc))
    member.close()
    emit("closed")


def placing_group(bootstrap: str, name: str, slots: int) -> GroupConfig:
    """A runtime group of a test's own that places channels, with the fault suite's short
    timings (6 s session, 0.5 s heartbeat, 2 s fence margin)."""
    name = f"{name}-{uuid.uuid4().hex[:8]}"
    return GroupConfig(
        bootstrap=bootstrap,
        group_id=name,
        config_topic=f"{name}.config",
        status_topic=f"{name}.status",
        slots=slots,
        session_timeout=6.0,
        heartbeat_interval=0.5,
        fence_margin=2.0,
        placement="group",
    )


if __name__ == "__main__":
    _member_main(sys.argv[1])
