"""Which network addresses a stage may connect to (the SSRF guard of the HTTP and JDBC sinks
and of the enrich transform).

A sink that connects to an address a user typed must not become a way into the network it
runs in: loopback, link-local (the cloud metadata service at 169.254.169.254 among them),
private (RFC 1918, fc00::/7), shared (100.64.0.0/10), unspecified, multicast and reserved
addresses are refused, and so are IPv6 addresses that embed such an IPv4 address
(IPv4-mapped ``::ffff:127.0.0.1``, 6to4 ``2002:7f00:1::``, Teredo ``2001::/32``, NAT64
``64:ff9b::7f00:1``, IPv4-compatible ``::127.0.0.1``), unless the sink's allow-list names them.

Each sink has an allow-list of its own (:class:`Outbound`), so allowing a local database does
not let HTTP requests reach loopback services, and the other way round:

* ``SLUICE_HTTP_SINK_ALLOW`` - the ``http`` sink;
* ``SLUICE_JDBC_SINK_ALLOW`` - the ``jdbc`` sink's PostgreSQL hosts;
* ``SLUICE_HTTP_ENRICH_ALLOW`` - the ``enrich`` transform's HTTP endpoints.
* ``SLUICE_SCHEMA_REGISTRY_ALLOW`` - external schema registries of Kafka stages (wire formats).

A team's reach (:mod:`pipelines.spec.reach`) may replace each for its channels (its
``http_sink``, ``jdbc_sink``, ``http_enrich``, ``schema_registry``): :func:`allow_list` returns
the team's list while the reach is in effect, and refusals then name it.

Each is comma-separated host names (``localhost``, ``api.internal``; exact,
case-insensitive) and/or CIDRs or addresses (``10.0.0.0/8``, ``127.0.0.1``, ``::1``).
pipelines has no Django settings: the console (spec validation) and the runtime workers
(which launch the drivers) must both get them.

Two checks use them:

* :func:`check_url_host` at spec validation, without DNS: a host that is an address literal
  (also the legacy forms ``2130706433`` or ``127.1`` that C resolvers accept) or ``localhost``.
* :func:`vetted_addresses` on every new connection: it resolves the host once, refuses the
  connection when any address it resolves to is forbidden, and the caller connects to the
  very addresses it checked (the connection is pinned: a DNS answer that changes between
  check and connect - DNS rebinding - cannot slip a private address in).
  :class:`GuardedPoolManager` does that for the HTTP sink and the enrich transform (TLS
  still verifies the certificate against the host name); the JDBC sink passes the checked
  address to libpq as ``hostaddr`` (``host`` stays the name, for TLS).
"""

from __future__ import annotations

import ipaddress
import os
import socket
from dataclasses import dataclass
from typing import Any

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.util import connection as urllib3_connection

ALLOW_ENV = "SLUICE_HTTP_SINK_ALLOW"
JDBC_ALLOW_ENV = "SLUICE_JDBC_SINK_ALLOW"
ENRICH_ALLOW_ENV = "SLUICE_HTTP_ENRICH_ALLOW"
REGISTRY_ALLOW_ENV = "SLUICE_SCHEMA_REGISTRY_ALLOW"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT; not is_private in 3.11
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052 well-known prefix
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")  # deprecated (RFC 4291 2.5.5.1)
_LOCALHOST_NAMES = ("localhost", "localhost.localdomain")


class ForbiddenAddress(Exception):
    """A connection to a forbidden address was refused (never an ``OSError``: not retried)."""


@dataclass(frozen=True)
class Outbound:
    """A kind of outbound connection: who refuses, the variable of its allow-list (the site's
    default) and its key in a team's reach (:mod:`pipelines.spec.reach`)."""

    who: str
    allow_env: str
    reach_key: str


HTTP_SINK = Outbound("the HTTP sink", ALLOW_ENV, "http_sink")
JDBC_SINK = Outbound("the JDBC sink", JDBC_ALLOW_ENV, "jdbc_sink")
HTTP_ENRICH = Outbound("the enrich transform", ENRICH_ALLOW_ENV, "http_enrich")
SCHEMA_REGISTRY = Outbound("an external schema registry", REGISTRY_ALLOW_ENV, "schema_registry")


def forbidden_reason(address: IPAddress) -> str | None:
    """Why ``address`` may not be connected to, or ``None`` when it is a public address.

    An IPv4-mapped or NAT64 (``64:ff9b::/96``) IPv6 address is judged as the IPv4 address it
    stands for. A Teredo or IPv4-compatible address is refused when the IPv4 address it embeds
    is forbidden, and otherwise judged as an IPv6 address; a 6to4 address is always refused.
    """
    if isinstance(address, ipaddress.IPv6Address):
        for kind, embedded in _embedded_ipv4(address):
            reason = forbidden_reason(embedded)
            if reason is not None:
                return f"{kind} {reason}"
        if address.ipv4_mapped is not None or address in _NAT64:
            return None
        if address.sixtofour is not None:
            # Deprecated (RFC 7526), and Python's own verdict on 2002::/16 depends on its patch
            # level (CVE-2024-4032): refused whatever the IPv4 address it embeds.
            return "6to4 address (deprecated relay form, RFC 7526)"
    checks = (
        (address.is_unspecified, "unspecified address"),
        (address.is_loopback, "loopback address"),
        (address.is_link_local, "link-local address (cloud metadata lives there)"),
        (address.is_multicast, "multicast address"),
        (address in _SHARED, "shared (carrier-grade NAT) address"),
        (address.is_reserved, "reserved address"),
        (address.is_private, "private address"),
        (not address.is_global, "non-global address"),
    )
    for hit, reason in checks:
        if hit:
            return reason
    return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """The IPv4 addresses ``address`` embeds, each with the name of the embedding."""
    if address.ipv4_mapped is not None:
        return [("IPv4-mapped", address.ipv4_mapped)]
    if address in _NAT64:
        return [("NAT64", ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))]
    if address.sixtofour is not None:
        return [("6to4", address.sixtofour)]
    if address.teredo is not None:
        server, client = address.teredo
        return [("Teredo", client), ("Teredo server", server)]
    if address in _IPV4_COMPATIBLE and not (address.is_unspecified or address.is_loopback):
        return [("IPv4-compatible", ipaddress.IPv4Address(int(address)))]
    return []


@dataclass(frozen=True)
class AllowList:
    """Host names and networks a sink may reach even though they are not public.

    ``outbound`` names the sink and the variable in refusals; ``granted_by``, when set, names
    what the list comes from instead of the variable (a team's reach).
    """

    hosts: frozenset[str] = frozenset()
    networks: tuple[IPNetwork, ...] = ()
    outbound: Outbound = HTTP_SINK
    granted_by: str | None = None

    @classmethod
    def parse(
        cls, text: str, outbound: Outbound = HTTP_SINK, granted_by: str | None = None
    ) -> AllowList:
        """Parse an allow-list variable's text; raise ``ValueError`` naming a bad entry."""
        hosts: set[str] = set()
        networks: list[IPNetwork] = []
        for raw in text.split(","):
            entry = raw.strip().strip("[]")
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
                continue
            except ValueError:
                pass
            if "/" in entry or any(c.isspace() for c in entry):
                raise ValueError(
                    f"{granted_by or outbound.allow_env}: {raw.strip()!r} is neither a host "
                    "name nor a CIDR"
                )
            hosts.add(entry.lower().rstrip("."))
        return cls(frozenset(hosts), tuple(networks), outbound, granted_by)

    def refusal(self, shown: str, reason: str) -> str:
        """The message refusing ``shown`` (a host, maybe with its address) for ``reason``."""
        return (
            f"{shown} is a {reason}; {self.outbound.who} refuses it unless "
            f"{self.granted_by or self.outbound.allow_env} names it"
        )

    def allows_host(self, host: str) -> bool:
        return host.lower().rstrip(".") in self.hosts

    def allows_address(self, address: IPAddress) -> bool:
        candidates = [address]
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            candidates.append(address.ipv4_mapped)
        return any(
            candidate.version == network.version and candidate in network
            for candidate in candidates
            for network in self.networks
        )


def allow_list(outbound: Outbound = HTTP_SINK) -> AllowList:
    """The allow-list of ``outbound`` (default: the HTTP sink's): the team's, when the reach in
    effect (:mod:`pipelines.spec.reach`) sets it, else this process's environment's
    (``SLUICE_HTTP_SINK_ALLOW``, ...: the site's default)."""
    from pipelines.spec.reach import allow_list_entries

    given = allow_list_entries(outbound.reach_key)
    if given is not None:
        scope, entries = given
        return AllowList.parse(",".join(entries), outbound, scope.names(outbound.reach_key))
    return AllowList.parse(os.environ.get(outbound.allow_env, ""), outbound)


def address_literal(host: str) -> IPAddress | None:
    """The address ``host`` spells, or ``None`` for a name that needs DNS.

    Besides the standard forms this recognises what ``inet_aton`` (so every C resolver)
    takes as IPv4: ``2130706433``, ``127.1``, ``0x7f.0.0.1``.
    """
    text = host.strip("[]")
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        pass
    if text and all(c in "0123456789abcdefxABCDEFX." for c in text) and text[0].isdigit():
        try:
            return ipaddress.IPv4Address(socket.inet_aton(text))
        except OSError:
            return None
    return None


def check_url_host(
    host: str, allowed: AllowList | None = None, outbound: Outbound = HTTP_SINK
) -> None:
    """Raise ``ValueError`` when ``host`` is, without DNS, known to be forbidden.

    That is an address literal that is not public, or ``localhost`` (and ``*.localhost``),
    unless the allow-list (``allowed``, by default ``outbound``'s from the environment)
    names the host or a network holding the address.
    """
    allowed = allow_list(outbound) if allowed is None else allowed
    if allowed.allows_host(host):
        return
    name = host.lower().rstrip(".")
    if name in _LOCALHOST_NAMES or name.endswith(".localhost"):
        raise ValueError(allowed.refusal(host, "loopback host"))
    address = address_literal(host)
    if address is None or allowed.allows_address(address):
        return
    reason = forbidden_reason(address)
    if reason is not None:
        raise ValueError(allowed.refusal(host, reason))


SocketAddress = tuple[str, int] | tuple[str, int, int, int] | tuple[int, bytes]
"""A ``getaddrinfo`` address (IPv4, or IPv6 with flow info and scope id), as typeshed has it."""
ResolvedAddress = tuple[socket.AddressFamily, socket.SocketKind, int, SocketAddress]
"""``(family, type, proto, sockaddr)``: ``socket.socket(family, type, proto)`` connects to
``sockaddr``."""


def vetted_addresses(host: str, port: int, allowed: AllowList) -> list[ResolvedAddress]:
    """Resolve ``host`` once; every ``getaddrinfo`` entry, all of them allowed.

    Raises :class:`ForbiddenAddress` when any address is forbidden (a name that resolves to
    a public and a private address is refused: the resolver could hand out either) and
    ``socket.gaierror`` when the name does not resolve.
    """
    infos = socket.getaddrinfo(host.strip("[]"), port, 0, socket.SOCK_STREAM)
    if allowed.allows_host(host):
        return [(family, type_, proto, sockaddr) for family, type_, proto, _, sockaddr in infos]
    vetted: list[ResolvedAddress] = []
    for family, type_, proto, _, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        reason = None if allowed.allows_address(address) else forbidden_reason(address)
        if reason is not None:
            shown = host if host.strip("[]") == str(address) else f"{host} ({address})"
            raise ForbiddenAddress(allowed.refusal(shown, reason))
        vetted.append((family, type_, proto, sockaddr))
    return vetted


def vetted_ips(host: str, port: int, allowed: AllowList) -> list[str]:
    """:func:`vetted_addresses` as address texts (each once, in the resolver's order), for a
    client that pins its connection with an address parameter (libpq's ``hostaddr``)."""
    texts = (str(sockaddr[0]) for _, _, _, sockaddr in vetted_addresses(host, port, allowed))
    return list(dict.fromkeys(texts))


def _connect(conn: HTTPConnection, allowed: AllowList) -> socket.socket:
    """``HTTPConnection._new_conn`` with the guard: resolve, check, connect to what was checked."""
    try:
        addresses = vetted_addresses(conn._dns_host, conn.port, allowed)
    except socket.gaierror as error:
        raise NameResolutionError(conn.host, conn, error) from error
    last: OSError | None = None
    for family, type_, proto, sockaddr in addresses:
        sock = socket.socket(family, type_, proto)
        timeout = conn.timeout  # the pool resolved it to seconds (or None: blocking)
        try:
            urllib3_connection._set_socket_options(sock, conn.socket_options)
            if isinstance(timeout, int | float):
                sock.settimeout(timeout)
            if conn.source_address:
                sock.bind(conn.source_address)
            sock.connect(sockaddr)
            return sock
        except TimeoutError as error:
            sock.close()
            raise ConnectTimeoutError(
                conn, f"Connection to {conn.host} timed out. (connect timeout={timeout})"
            ) from error
        except OSError as error:
            sock.close()
            last = error
    raise NewConnectionError(conn, f"Failed to establish a new connection: {last}")


class _GuardedHTTPConnection(HTTPConnection):
    allowed: AllowList = AllowList()

    def _new_conn(self) -> socket.socket:
        return _connect(self, self.allowed)


class _GuardedHTTPSConnection(HTTPSConnection):
    allowed: AllowList = AllowList()

    def _new_conn(self) -> socket.socket:
        return _connect(self, self.allowed)


class GuardedPoolManager(urllib3.PoolManager):
    """A ``PoolManager`` whose every new connection goes only to allowed addresses.

    A refused connection raises :class:`ForbiddenAddress` out of ``request``.
    """

    def __init__(self, allowed: AllowList, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        http_conn = type("HTTPConnection", (_GuardedHTTPConnection,), {"allowed": allowed})
        https_conn = type("HTTPSConnection", (_GuardedHTTPSConnection,), {"allowed": allowed})
        self.pool_classes_by_scheme = {
            "http": type("HTTPConnectionPool", (HTTPConnectionPool,), {"ConnectionCls": http_conn}),
            "https": type(
                "HTTPSConnectionPool", (HTTPSConnectionPool,), {"ConnectionCls": https_conn}
            ),
        }
