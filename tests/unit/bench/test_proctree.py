"""The peak-RSS sampler of the data-plane benchmark (bench/proctree.py): what it reads from
``/proc/<pid>/status`` and how it sums a process tree."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from bench.proctree import PeakRss, parse_status, tree_rss, tree_total

STATUS = """Name:\tjava
Umask:\t0022
State:\tS (sleeping)
Tgid:\t4242
Pid:\t4242
PPid:\t4200
VmPeak:\t 5000000 kB
VmRSS:\t  812345 kB
Threads:\t61
"""


def test_status_gives_the_parent_and_the_resident_bytes() -> None:
    assert parse_status(STATUS) == (4200, 812345 * 1024)


def test_a_process_without_resident_memory_counts_zero() -> None:
    kernel_thread = "Name:\tkthreadd\nPPid:\t0\nThreads:\t1\n"
    assert parse_status(kernel_thread) == (0, 0)


def test_the_tree_is_the_root_and_every_descendant_only() -> None:
    processes = {
        10: (1, 100),  # the contender
        11: (10, 20),  # its JVM
        12: (11, 3),  # a child of the JVM
        13: (1, 1000),  # someone else's
        14: (13, 7),
    }
    assert tree_total(10, processes) == 123
    assert tree_total(11, processes) == 23
    assert tree_total(99, processes) == 0  # gone


def test_a_loop_in_the_table_does_not_hang_the_walk() -> None:
    # pid reuse between two reads of /proc can make a process look like its own ancestor
    assert tree_total(1, {1: (2, 5), 2: (1, 6)}) == 11


def test_this_process_tree_is_counted_with_its_child() -> None:
    alone = tree_rss(os.getpid())
    assert alone > 1 << 20
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        time.sleep(0.5)
        assert tree_rss(os.getpid()) > alone
    finally:
        child.kill()
        child.wait()


def test_the_sampler_keeps_the_peak_seen() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "b = bytearray(64 << 20); import time; time.sleep(1)"]
    )
    with PeakRss(child.pid, every=0.05) as memory:
        child.wait()
    assert memory.peak >= 64 << 20  # kept after the child ended
    assert memory.stop() == memory.peak
