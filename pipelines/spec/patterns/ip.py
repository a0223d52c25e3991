"""IP address and CIDR parsing for the ``cidr`` operator and IP-address literals.

Pure Python. The Spark compiler (``pipelines.patterns``) re-implements :func:`parse_ip` with
native Column expressions built from the same regular expressions, so that both evaluation
paths accept exactly the same addresses.

Accepted text (a strict subset of what ``java.net.InetAddress`` reads in aws/event-ruler):

* IPv4: dotted quad, each part 0-255 in decimal without leading zeros (``10.0.0.1``).
* IPv6: eight hexadecimal groups, or fewer with one ``::`` (``2001:db8::1``); no embedded
  IPv4 dotted form, no zone id. An IPv4-mapped address (``::ffff:a00:1``) stays IPv6 (Java
  would read it as IPv4).

Both are defined by the regular expressions below, which the Spark twin uses too.

Addresses are compared through a *key*: ``"4:"`` + 8 upper-case hex digits, or ``"6:"`` + 32
upper-case hex digits. Keys of one version have one length, so string order is numeric order,
and an IPv4 key never falls inside an IPv6 range.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_GROUP = r"[0-9a-fA-F]{1,4}"

IPV4_REGEX = rf"{_OCTET}(\.{_OCTET}){{3}}"
"""A dotted-quad IPv4 address, parts 0-255 without leading zeros."""

IPV6_REGEX = "|".join(
    [
        rf"({_GROUP}:){{7}}{_GROUP}",
        rf"({_GROUP}:){{1,7}}:",
        *(rf"({_GROUP}:){{1,{7 - tail}}}(:{_GROUP}){{1,{tail}}}" for tail in range(1, 7)),
        rf":((:{_GROUP}){{1,7}}|:)",
    ]
)
"""An IPv6 address: 8 groups, or fewer with exactly one ``::`` standing for the rest."""

_IPV4 = re.compile(IPV4_REGEX)
_IPV6 = re.compile(IPV6_REGEX)
_BITS = {4: 32, 6: 128}


@dataclass(frozen=True)
class IpAddress:
    """An IPv4 or IPv6 address as (version, integer value)."""

    version: int
    value: int

    @property
    def key(self) -> str:
        """The comparable key, e.g. ``4:0A000001``."""
        return ip_key(self.version, self.value)


def ip_key(version: int, value: int) -> str:
    """Return the comparable string key of an address (see the module docstring)."""
    digits = _BITS[version] // 4
    return f"{version}:{value:0{digits}X}"


def parse_ip(text: str) -> IpAddress | None:
    """Parse an IP address literal; return ``None`` when ``text`` is not one."""
    if _IPV4.fullmatch(text):
        return IpAddress(4, int.from_bytes(bytes(int(part) for part in text.split(".")), "big"))
    if not _IPV6.fullmatch(text):
        return None
    head, _, tail = text.partition("::")
    groups = [group for group in head.split(":") if group]
    if "::" in text:
        named = [group for group in tail.split(":") if group]
        groups += ["0"] * (8 - len(groups) - len(named)) + named
    return IpAddress(6, int("".join(group.rjust(4, "0") for group in groups), 16))


def parse_cidr(text: str) -> tuple[IpAddress, IpAddress]:
    """Parse ``address/bits`` into the (lowest, highest) address of the block.

    Host bits in the address are ignored (``10.0.0.7/24`` is ``10.0.0.0``-``10.0.0.255``).
    Raises ``ValueError`` with a readable message when the text is not a CIDR block.
    """
    address_text, slash, bits_text = text.partition("/")
    if not slash or "/" in bits_text:
        raise ValueError(f"malformed CIDR {text!r}: expected address/bits, e.g. 10.0.0.0/24")
    if not bits_text.isascii() or not bits_text.isdigit():
        raise ValueError(f"malformed CIDR {text!r}: mask bits must be a non-negative integer")
    address = parse_ip(address_text)
    if address is None:
        raise ValueError(f"malformed CIDR {text!r}: {address_text!r} is not an IP address")
    width = _BITS[address.version]
    bits = int(bits_text)
    if bits > width:
        raise ValueError(
            f"malformed CIDR {text!r}: IPv{address.version} mask bits must be <= {width}"
        )
    host_mask = (1 << (width - bits)) - 1
    low = address.value & ~host_mask
    return IpAddress(address.version, low), IpAddress(address.version, low | host_mask)
