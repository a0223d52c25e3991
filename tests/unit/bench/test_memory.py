"""The memory benchmark's readings of the JDK's tools and its arithmetic (bench/jvm.py,
bench/memory.py): a full-GC class histogram, the heap's spaces, the JVM's flags and threads, the
slope per channel, what grew by class, package and thread, and the report's table."""

from __future__ import annotations

import pytest

from bench.jvm import (
    Histogram,
    class_name,
    growth,
    package_of,
    parse_flags,
    parse_heap_info,
    parse_histogram,
    parse_threads,
    slope,
)
from bench.memory import Footprint, Results, max_heap, report, thread_growth

#: ``jcmd PID GC.class_histogram`` of a Java 17 JVM (rows cut; the total is the JVM's).
HISTOGRAM = """4242:
 num     #instances         #bytes  class name (module)
-------------------------------------------------------
   1:        123456        9876544  [B (java.base@17.0.15)
   2:         98765        2370360  java.lang.String (java.base@17.0.15)
   3:         12345         395040  java.util.concurrent.ConcurrentHashMap$Node (java.base@17.0.15)
   4:          1234         123456  [Ljava.lang.Object; (java.base@17.0.15)
   5:           100           2400  org.apache.spark.util.BestEffortLazyVal
   6:            10            240  org.apache.spark.util.BestEffortLazyVal
   7:             3            120  [[I (java.base@17.0.15)
Total        235913       13000000
"""

G1_HEAP_INFO = """4242:
 garbage-first heap   total 262144K, used 123456K [0x0000000080000000, 0x0000000100000000)
  region size 1024K, 45 young (46080K), 3 survivors (3072K)
 Metaspace       used 85555K, committed 86016K, reserved 1122304K
  class space    used 10321K, committed 10624K, reserved 1048576K
"""

PARALLEL_HEAP_INFO = """4242:
 PSYoungGen      total 76288K, used 3932K [0x00000000eab00000, 0x00000000f0000000)
  eden space 65536K, 6% used [0x00000000eab00000,0x00000000eaed7240,0x00000000eeb00000)
  from space 10752K, 0% used [0x00000000ef580000,0x00000000ef580000,0x00000000f0000000)
 ParOldGen       total 175104K, used 1024K [0x00000000c0000000, 0x00000000cab00000)
  object space 175104K, 0% used [0x00000000c0000000,0x00000000c0000000,0x00000000cab00000)
 Metaspace       used 3250K, committed 3456K, reserved 1056768K
  class space    used 350K, committed 384K, reserved 1048576K
"""

THREADS = """4242:
2026-11-30 21:00:00
Full thread dump OpenJDK 64-Bit Server VM (17.0.15+6-Debian-1deb12u1 mixed mode, sharing):

"main" #1 prio=5 os_prio=0 cpu=812.00ms elapsed=60.00s tid=0x00007f nid=0x10 waiting on condition
   java.lang.Thread.State: TIMED_WAITING (sleeping)

"kafka-admin-client-thread | adminclient-1" #85 daemon prio=5 os_prio=0 cpu=1.00ms tid=0x1
"kafka-admin-client-thread | adminclient-12" #97 daemon prio=5 os_prio=0 cpu=1.00ms tid=0x2
"stream execution thread for sluice-a [id = 0b0f5ad2-5a53-4d0e-8d43-8f7c2bbd0a11, runId = 1]" #90
"VM Thread" os_prio=0 cpu=12.34ms elapsed=60.00s tid=0x00007f nid=0x11 runnable
"""


def test_a_histogram_gives_the_live_total_and_each_class_merged_across_loaders() -> None:
    histogram = parse_histogram(HISTOGRAM)
    assert (histogram.instances, histogram.bytes) == (235913, 13_000_000)
    assert histogram.classes["byte[]"] == (123456, 9876544)
    assert histogram.classes["java.lang.Object[]"] == (1234, 123456)
    assert histogram.classes["int[][]"] == (3, 120)
    # The same name in two class loaders is one class here.
    assert histogram.classes["org.apache.spark.util.BestEffortLazyVal"] == (110, 2640)


def test_a_histogram_without_its_total_line_sums_its_rows() -> None:
    rows = "   1:        10        160  java.lang.String (java.base@17.0.15)\n   2:   1   16  Foo\n"
    assert parse_histogram(rows).bytes == 176


@pytest.mark.parametrize(
    ("descriptor", "name"),
    [
        ("[B", "byte[]"),
        ("[J", "long[]"),
        ("[Ljava.lang.String;", "java.lang.String[]"),
        ("[[Lscala.Tuple2;", "scala.Tuple2[][]"),
        ("java.util.HashMap$Node", "java.util.HashMap$Node"),
    ],
)
def test_class_names_read_as_java_spells_them(descriptor: str, name: str) -> None:
    assert class_name(descriptor) == name


def test_g1_heap_info_gives_committed_used_and_metaspace() -> None:
    heap = parse_heap_info(G1_HEAP_INFO)
    assert heap.committed == 262144 * 1024
    assert heap.used == 123456 * 1024
    assert (heap.metaspace_used, heap.metaspace_committed) == (85555 * 1024, 86016 * 1024)


def test_a_generational_heap_sums_its_generations() -> None:
    heap = parse_heap_info(PARALLEL_HEAP_INFO)
    assert heap.committed == (76288 + 175104) * 1024
    assert heap.used == (3932 + 1024) * 1024
    assert heap.metaspace_committed == 3456 * 1024


def test_flags_keep_the_heap_and_the_collector() -> None:
    flags = parse_flags(
        "4242:\n-XX:CICompilerCount=2 -XX:InitialHeapSize=393216000 -XX:MaxHeapSize=2147483648 "
        "-XX:+UseCompressedOops -XX:+UseG1GC -XX:-UseSerialGC\n"
    )
    assert flags == {
        "InitialHeapSize": "393216000",
        "MaxHeapSize": "2147483648",
        "UseG1GC": "True",
        "UseSerialGC": "False",
    }
    footprint = Footprint("x", 0, 0, 0, 0, 0, 0, 0, flags=flags)
    assert max_heap(footprint) == "2,048 MiB G1"


def test_threads_are_counted_by_name_with_their_numbers_and_ids_made_hashes() -> None:
    assert parse_threads(THREADS) == {
        "main": 1,
        "kafka-admin-client-thread | adminclient-#": 2,
        "stream execution thread for sluice-a [id = #, runId = #]": 1,
    }  # the VM's own threads (no thread number) are left out


def test_the_slope_is_least_squares() -> None:
    assert slope([1, 10, 20, 40], [5, 50, 100, 200]) == pytest.approx(5.0)
    assert slope([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
    assert slope([5], [1]) == 0.0
    assert slope([5, 5], [1, 2]) == 0.0


@pytest.mark.parametrize(
    ("name", "package"),
    [
        ("org.apache.kafka.common.metrics.KafkaMetric", "org.apache.kafka.common.metrics"),
        ("java.util.HashMap$Node[]", "java.util"),
        ("byte[]", "byte[]"),
        ("long[][]", "long[][]"),
        ("Foo", "(default package)"),
    ],
)
def test_a_class_belongs_to_its_package(name: str, package: str) -> None:
    assert package_of(name) == package


def test_growth_per_channel_by_class_and_by_package() -> None:
    first = Histogram(0, 0, {"a.B": (10, 1000), "a.C": (1, 100), "byte[]": (5, 500)})
    last = Histogram(0, 0, {"a.B": (30, 3000), "a.D": (10, 400), "byte[]": (5, 500)})
    by_class = growth(first, last, 10)
    assert [(g.name, g.bytes_per_channel, g.instances_per_channel) for g in by_class] == [
        ("a.B", 200.0, 2.0),
        ("a.D", 40.0, 1.0),
        ("byte[]", 0.0, 0.0),
        ("a.C", -10.0, -0.1),
    ]
    by_package = growth(first, last, 10, by_package=True)
    assert (by_package[0].name, by_package[0].bytes_per_channel) == ("a", 230.0)


def test_thread_growth_lists_the_threads_each_channel_adds() -> None:
    first = Footprint("0", 0, 0, 0, 0, 0, 0, 0, thread_names={"main": 1, "pool-#": 4})
    last = Footprint("10", 0, 0, 0, 0, 0, 0, 0, thread_names={"main": 1, "admin": 10, "pool-#": 9})
    assert thread_growth(first, last, 10) == [("admin", 1.0), ("pool-#", 0.5)]


def test_the_report_lists_what_was_measured() -> None:
    idle = Footprint("Sluice, 0", 400 << 20, 300 << 20, 128 << 20, 80 << 20, 45 << 20, 84 << 20, 61)
    results = Results(events=1000, settle=30, idle=[idle], settings={"x": "--jars /a/b/k.jar"})
    text = report(results)
    row = "| Sluice, 0 | ? | 400 MiB | 300 MiB | 128 MiB | 80 MiB | 45.0 MiB | 0 MiB | 84.0 MiB |"
    assert f"{row} 61 |" in text
    assert "settings, x: --jars k.jar" in text
