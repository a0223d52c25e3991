"""Runtime hosts in network namespaces of their own, for the fault suite (tests/faults).

A :class:`HostNetwork` is a Linux bridge on this machine with the first address of a small
private /24 (:data:`SUBNET`) and, per host, a network namespace joined to the bridge by a
veth pair. A namespace has a loopback of its own, the bridge's /24 and no default route: a
process inside reaches only its own loopback, the bridge address (where the suite's servers
listen besides 127.0.0.1) and the other namespaces. Nothing here sends traffic anywhere else.

Every name starts with :data:`PREFIX`; :func:`sweep` removes whatever an earlier run left
(a test killed before its finalizers), and :meth:`HostNetwork.close` removes what it made.
Needs root (``ip netns``, ``iptables`` inside a namespace).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.processes import Service, start_service

PREFIX = "slf-"
"""Every namespace, bridge and veth of the suite is named ``slf-…`` (15 characters at most)."""
SUBNET = "10.231.77"
"""The suite's /24: ``.1`` the bridge (this machine), ``.10+i`` host i's namespace."""
BRIDGE = f"{PREFIX}br0"
BRIDGE_ADDRESS = f"{SUBNET}.1"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def _ours(names: Sequence[str]) -> list[str]:
    return [name for name in names if name.startswith(PREFIX)]


def sweep() -> None:
    """Remove every namespace (killing what runs in it) and link named ``slf-…``, left by an
    earlier run. Idempotent."""
    listed = _ip("netns", "list", check=False).stdout.split("\n")
    for namespace in _ours([line.split()[0] for line in listed if line.strip()]):
        _kill_namespace(namespace)
        _ip("netns", "delete", namespace, check=False)
    links = _ip("-o", "link", "show", check=False).stdout.splitlines()
    for name in _ours([line.split(":")[1].strip().split("@")[0] for line in links]):
        _ip("link", "delete", name, check=False)


def _namespace_pids(namespace: str) -> list[int]:
    found = _ip("netns", "pids", namespace, check=False).stdout.split()
    return [int(pid) for pid in found]


def _kill_namespace(namespace: str) -> list[int]:
    """SIGKILL every process in ``namespace``; the pids killed."""
    pids = _namespace_pids(namespace)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pids


@dataclass
class NetnsHost:
    """One runtime host: a namespace ``slf-hN`` with address ``SUBNET.(10+N)``."""

    index: int
    services: list[Service] = field(default_factory=list)

    @property
    def namespace(self) -> str:
        return f"{PREFIX}h{self.index}"

    @property
    def address(self) -> str:
        return f"{SUBNET}.{10 + self.index}"

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside this host's namespace (``ip netns exec``)."""
        return ["ip", "netns", "exec", self.namespace, *argv]

    def start(
        self, name: str, argv: Sequence[str], log_dir: Path, env: dict[str, str] | None = None
    ) -> Service:
        """Start ``argv`` inside the namespace, in a session of its own, its output in
        ``log_dir/<name>.log``; stopped with the host."""
        service = start_service(name, self.command(argv), log_dir, env)
        self.services.append(service)
        return service

    def pids(self) -> list[int]:
        """Every process running in the namespace now (its children included)."""
        return _namespace_pids(self.namespace)

    def kill(self) -> list[int]:
        """``kill -9`` of the whole host: every process in its namespace. Returns their pids
        once they are gone (at most 10 s)."""
        killed = _kill_namespace(self.namespace)
        for service in self.services:
            with contextlib.suppress(subprocess.TimeoutExpired):
                service.process.wait(timeout=10)
        return killed

    def partition(self, peer: tuple[str, int] | None = None) -> None:
        """Cut the host off: its namespace drops every packet in or out of its veth (its own
        loopback keeps working, as on a real host whose network is gone). With ``peer``
        (address, TCP port) only the traffic to and from that one server is dropped."""
        if peer is None:
            self._iptables("-A", "INPUT", "-i", "eth0", "-j", "DROP")
            self._iptables("-A", "OUTPUT", "-o", "eth0", "-j", "DROP")
            return
        address, port = peer
        self._iptables(
            "-A", "INPUT", "-i", "eth0", "-s", address, "-p", "tcp", "--sport", str(port),
            "-j", "DROP",
        )  # fmt: skip
        self._iptables(
            "-A", "OUTPUT", "-o", "eth0", "-d", address, "-p", "tcp", "--dport", str(port),
            "-j", "DROP",
        )  # fmt: skip

    def heal(self) -> None:
        """Undo :meth:`partition`."""
        self._iptables("-F", "INPUT")
        self._iptables("-F", "OUTPUT")

    def _iptables(self, *args: str) -> None:
        subprocess.run(
            self.command(["iptables", "-w", *args]), check=True, capture_output=True, text=True
        )


class HostNetwork:
    """The bridge and the namespaces of the hosts made with :meth:`add_host`."""

    def __init__(self) -> None:
        sweep()
        _ip("link", "add", BRIDGE, "type", "bridge")
        _ip("addr", "add", f"{BRIDGE_ADDRESS}/24", "dev", BRIDGE)
        _ip("link", "set", BRIDGE, "up")
        self.hosts: list[NetnsHost] = []

    def add_host(self) -> NetnsHost:
        """A new namespace joined to the bridge, its loopback and veth up."""
        host = NetnsHost(len(self.hosts) + 1)
        outside, inside = f"{PREFIX}v{host.index}", f"{PREFIX}v{host.index}p"
        _ip("netns", "add", host.namespace)
        _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        _ip("link", "set", inside, "netns", host.namespace)
        _ip("link", "set", outside, "master", BRIDGE)
        _ip("link", "set", outside, "up")
        for argv in (
            ["ip", "link", "set", inside, "name", "eth0"],
            ["ip", "addr", "add", f"{host.address}/24", "dev", "eth0"],
            ["ip", "link", "set", "eth0", "up"],
            ["ip", "link", "set", "lo", "up"],
        ):
            subprocess.run(host.command(argv), check=True, capture_output=True, text=True)
        self.hosts.append(host)
        return host

    def close(self) -> None:
        """Kill everything in the namespaces and remove them, the veths and the bridge."""
        for host in self.hosts:
            host.kill()
            for service in host.services:
                service.stop(timeout=5)
        sweep()
