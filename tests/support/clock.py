"""A monotonic clock moved by hand, for the code that takes one (``clock=``)."""

from __future__ import annotations


class ManualClock:
    """Starts at ``start`` seconds; a test moves ``now`` forward."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now
