"""A process with a skewed clock (libfaketime, a Debian package: scripts/ensure-system.sh).

Only the wall clock moves (``time.time()``, ``gettimeofday``, ``clock_gettime(CLOCK_REALTIME)``);
monotonic clocks are left alone (``FAKETIME_DONT_FAKE_MONOTONIC``), as on a real host whose clock
is off: timeouts still take their real length, only timestamps lie.
"""

from __future__ import annotations

import glob
import re

OFFSET = re.compile(r"^[+-]\d+(\.\d+)?[smhdy]?$")


def libfaketime() -> str:
    """The path of Debian's ``libfaketime.so.1``; ``FileNotFoundError`` when not installed."""
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))
    if not found:
        raise FileNotFoundError("libfaketime is not installed: run scripts/ensure-system.sh")
    return found[0]


def skewed_env(offset: str) -> dict[str, str]:
    """Environment variables that start a process ``offset`` off the real clock (``+30s``,
    ``-30s``, ``+2m``): its wall clock keeps running at real speed from there."""
    if not OFFSET.match(offset):
        raise ValueError(f"{offset!r} is not a libfaketime offset such as +30s or -30s")
    return {
        "LD_PRELOAD": libfaketime(),
        "FAKETIME": offset,
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "FAKETIME_DONT_RESET": "1",  # children (drivers) keep the same offset, not a new start
    }
