"""Peak resident memory of a contender's process tree, sampled from ``/proc`` while it runs.

A contender is often more than one process (Spark: the Python driver and its JVM; the peers: one
JVM), so its footprint is the sum of the resident set (``VmRSS``) of the process and of every
process under it, and what the bench reports is the largest such sum seen during the run.
"""

from __future__ import annotations

import threading
from pathlib import Path

SAMPLE_SECONDS = 0.25
"""How often the tree is sampled: a JVM's heap grows over seconds, so a quarter of a second
misses little, and the walk over ``/proc`` costs the measuring side next to nothing."""


def parse_status(text: str) -> tuple[int, int]:
    """``(parent pid, resident bytes)`` from a ``/proc/<pid>/status`` text; a kernel thread or a
    zombie has no ``VmRSS`` line and counts 0 bytes."""
    parent, rss = 0, 0
    for line in text.splitlines():
        if line.startswith("PPid:"):
            parent = int(line.split()[1])
        elif line.startswith("VmRSS:"):
            rss = int(line.split()[1]) * 1024  # the kernel writes kB (KiB)
    return parent, rss


def tree_total(root: int, processes: dict[int, tuple[int, int]]) -> int:
    """Resident bytes of ``root`` and all its descendants in ``processes``
    (pid -> (parent pid, resident bytes))."""
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in processes.items():
        children.setdefault(parent, []).append(pid)
    total, todo, seen = 0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += processes.get(pid, (0, 0))[1]
        todo.extend(children.get(pid, ()))
    return total


def processes(proc: Path = Path("/proc")) -> dict[int, tuple[int, int]]:
    """Every process now: pid -> (parent pid, resident bytes)."""
    found = {}
    for status in proc.glob("[0-9]*/status"):
        try:
            found[int(status.parent.name)] = parse_status(status.read_text())
        except (OSError, ValueError):  # gone meanwhile
            continue
    return found


def tree_rss(root: int) -> int:
    """Resident bytes of ``root``'s process tree now."""
    return tree_total(root, processes())


class PeakRss:
    """Samples ``root``'s tree every :data:`SAMPLE_SECONDS` in a thread, from ``start()`` (or
    entering the ``with`` block) to ``stop()``; :attr:`peak` is the largest total seen (bytes).
    """

    def __init__(self, root: int, every: float = SAMPLE_SECONDS):
        self.root = root
        self.every = every
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"peak-rss-{root}", daemon=True)

    def _run(self) -> None:
        while True:
            self.peak = max(self.peak, tree_rss(self.root))
            if self._stop.wait(self.every):
                return

    def start(self) -> PeakRss:
        self._thread.start()
        return self

    def stop(self) -> int:
        """Stops sampling (after one last sample) and returns the peak in bytes."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.peak = max(self.peak, tree_rss(self.root))
        return self.peak

    def __enter__(self) -> PeakRss:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
