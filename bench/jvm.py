"""What a JVM says about its memory, through the JDK's own tools (``jcmd``), and the arithmetic
of its class histograms (for :mod:`bench.memory`).

* ``jcmd PID GC.class_histogram`` forces a full GC and counts what survives, by class
  (:func:`parse_histogram`): the live heap;
* ``jcmd PID GC.heap_info``: the heap's committed and used bytes, the metaspace's
  (:func:`parse_heap_info`);
* ``jcmd PID VM.flags``: its heap ceiling and collector (:func:`parse_flags`);
* ``jcmd PID Thread.print``: its Java threads by name (:func:`parse_threads`).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.proctree import parse_status, processes

JCMD_TIMEOUT = 180.0
"""A histogram of a 2 GiB heap takes seconds; a JVM that does not answer in minutes is stuck."""


# -- what the JDK's tools say --------------------------------------------------------------------

_HISTOGRAM_ROW = re.compile(r"^\s*\d+:\s+(\d+)\s+(\d+)\s+(\S+)")
_HISTOGRAM_TOTAL = re.compile(r"^Total\s+(\d+)\s+(\d+)")
_HEAP_SPACE = re.compile(r"^\s*(?!Metaspace|class space)(\S[^\n]*?)\s+total (\d+)K, used (\d+)K")
_METASPACE = re.compile(r"^\s*Metaspace\s+used (\d+)K, committed (\d+)K")
_PRIMITIVES = {
    "Z": "boolean",
    "B": "byte",
    "C": "char",
    "S": "short",
    "I": "int",
    "J": "long",
    "F": "float",
    "D": "double",
}


@dataclass
class Histogram:
    """A full-GC class histogram: what survived, by class (``{name: (instances, bytes)}``)."""

    instances: int
    bytes: int
    classes: dict[str, tuple[int, int]]


def class_name(descriptor: str) -> str:
    """A histogram's class as Java source spells it: ``[B`` → ``byte[]``,
    ``[Ljava.lang.Object;`` → ``java.lang.Object[]``."""
    dims = len(descriptor) - len(descriptor.lstrip("["))
    if not dims:
        return descriptor
    element = descriptor[dims:]
    if element.startswith("L") and element.endswith(";"):
        element = element[1:-1]
    else:
        element = _PRIMITIVES.get(element, element)
    return element + "[]" * dims


def parse_histogram(text: str) -> Histogram:
    """What ``jcmd PID GC.class_histogram`` prints (a full GC first, then the live objects)."""
    classes: dict[str, tuple[int, int]] = {}
    total = (0, 0)
    for line in text.splitlines():
        row = _HISTOGRAM_ROW.match(line)
        if row:
            name = class_name(row.group(3))
            instances, size = classes.get(name, (0, 0))  # one name, several class loaders
            classes[name] = (instances + int(row.group(1)), size + int(row.group(2)))
            continue
        last = _HISTOGRAM_TOTAL.match(line)
        if last:
            total = (int(last.group(1)), int(last.group(2)))
    if total == (0, 0):
        total = (sum(i for i, _ in classes.values()), sum(b for _, b in classes.values()))
    return Histogram(total[0], total[1], classes)


@dataclass
class HeapInfo:
    """``jcmd PID GC.heap_info``: the heap's committed and used bytes (every space of the
    collector summed), the metaspace's."""

    committed: int
    used: int
    metaspace_used: int
    metaspace_committed: int


def parse_heap_info(text: str) -> HeapInfo:
    committed = used = meta_used = meta_committed = 0
    for line in text.splitlines():
        meta = _METASPACE.match(line)
        if meta:
            meta_used, meta_committed = int(meta.group(1)) * 1024, int(meta.group(2)) * 1024
            continue
        space = _HEAP_SPACE.match(line)
        if space:
            committed += int(space.group(2)) * 1024
            used += int(space.group(3)) * 1024
    return HeapInfo(committed, used, meta_used, meta_committed)


_THREAD = re.compile(r'^"(.*)" #\d+')
_NUMBERS = re.compile(r"[0-9a-f]{8}-[0-9a-f-]{27}|\d+")


def parse_threads(text: str) -> dict[str, int]:
    """Threads by name, their numbers and ids made ``#`` (``kafka-admin-client-thread |
    adminclient-#``), from ``jcmd PID Thread.print``."""
    names: dict[str, int] = {}
    for line in text.splitlines():
        thread = _THREAD.match(line)
        if thread:
            name = _NUMBERS.sub("#", thread.group(1))
            names[name] = names.get(name, 0) + 1
    return names


def parse_flags(text: str) -> dict[str, str]:
    """The heap and collector settings among ``jcmd PID VM.flags``."""
    wanted = ("MaxHeapSize", "InitialHeapSize", "UseG1GC", "UseParallelGC", "UseSerialGC")
    flags = {}
    for token in text.split():
        name = token.lstrip("-").removeprefix("XX:").lstrip("+-").split("=", 1)[0]
        if name in wanted:
            flags[name] = token.split("=", 1)[1] if "=" in token else token.startswith("-XX:+")
    return {key: str(value) for key, value in flags.items()}


def jcmd(pid: int, *command: str) -> str:
    done = subprocess.run(
        ["jcmd", str(pid), *command],
        capture_output=True,
        text=True,
        timeout=JCMD_TIMEOUT,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"jcmd {pid} {' '.join(command)}: {done.stdout[-500:]}{done.stderr}")
    return done.stdout


# -- processes -----------------------------------------------------------------------------------


def process_rss(pid: int) -> int:
    try:
        return parse_status(Path(f"/proc/{pid}/status").read_text())[1]
    except OSError:
        return 0


def process_threads(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in text.splitlines() if line[:8] == "Threads:"), 0)


def jvm_in(root: int) -> int:
    """The JVM of ``root``'s tree: ``root`` itself (``spark-submit`` and ``java`` exec into it)
    or the first ``java`` under it."""
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in processes().items():
        children.setdefault(parent, []).append(pid)
    todo = [root]
    while todo:
        pid = todo.pop(0)
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "java":
                return pid
        except OSError:
            pass
        todo.extend(children.get(pid, ()))
    raise RuntimeError(f"no JVM under process {root}")


def stop_group(process: subprocess.Popen, grace: float = 30) -> None:
    """SIGTERM to ``process``, SIGKILL to its process group (started as a session of its own)
    after ``grace`` seconds."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(grace)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # whatever of its tree is left
    if process.poll() is None:
        process.wait(10)


# -- what grew between two histograms --------------------------------------------------------------


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ``ys`` over ``xs`` (0 with fewer than two distinct xs)."""
    n = len(xs)
    if n < 2:
        return 0.0
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    spread = sum((x - mean_x) ** 2 for x in xs)
    if not spread:
        return 0.0
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


def package_of(name: str) -> str:
    """A class's package (an array counts as its element's; a primitive array is its own)."""
    element = name.split("[", 1)[0]
    if element in _PRIMITIVES.values():
        return name
    return element.rsplit(".", 1)[0] if "." in element else "(default package)"


@dataclass
class Growth:
    """What one class (or package) added to the live heap per channel."""

    name: str
    bytes_per_channel: float
    instances_per_channel: float


def growth(
    first: Histogram, last: Histogram, channels: int, *, by_package: bool = False
) -> list[Growth]:
    """Live bytes and instances each of ``channels`` added channels brought, by class (or by
    package), largest first."""

    def grouped(histogram: Histogram) -> dict[str, tuple[int, int]]:
        if not by_package:
            return histogram.classes
        groups: dict[str, tuple[int, int]] = {}
        for name, (instances, size) in histogram.classes.items():
            count, total = groups.get(package_of(name), (0, 0))
            groups[package_of(name)] = (count + instances, total + size)
        return groups

    before, after = grouped(first), grouped(last)
    rows = [
        Growth(
            name,
            (after.get(name, (0, 0))[1] - before.get(name, (0, 0))[1]) / channels,
            (after.get(name, (0, 0))[0] - before.get(name, (0, 0))[0]) / channels,
        )
        for name in set(before) | set(after)
    ]
    return sorted(rows, key=lambda row: row.bytes_per_channel, reverse=True)
