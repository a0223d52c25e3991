package io.sluice.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sluice.spark.MemoryWatch.Gauge;
import io.sluice.spark.MemoryWatch.Running;
import io.sluice.spark.MemoryWatch.Verdict;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class MemoryWatchTest {
  private static final Running A = new Running(1, 10, 3, "conn-a", 1_000);
  private static final Running B = new Running(2, 11, 4, "conn-b", 5_000);

  @Test
  void blamesTheTaskThatAllocatedTheMostSinceItStarted() {
    Map<Long, Long> now = Map.of(1L, 901_000L, 2L, 105_000L);
    assertEquals(
        A, MemoryWatch.culprit(List.of(A, B), t -> now.get(t.thread()) - t.allocatedAtStart(), 1));
  }

  @Test
  void blamesNoOneWhenNoTaskAllocatedEnough() {
    assertNull(MemoryWatch.culprit(List.of(A, B), t -> 99, 100));
    assertNull(MemoryWatch.culprit(List.of(), t -> 1_000, 0));
  }

  @Test
  void aFullCollectionOverTheLimitCountsAtOnceMinorOnesInARow() {
    Gauge gauge = new Gauge(100, 3);
    assertFalse(gauge.over(101, false));
    assertFalse(gauge.over(150, false));
    assertTrue(gauge.over(120, false));
    assertFalse(gauge.over(100, false)); // back under: the streak starts again
    assertFalse(gauge.over(101, false));
    assertTrue(gauge.over(101, true));
    assertFalse(gauge.over(99, true));
  }

  @Test
  void aVerdictCrossesToTheDriverWholeAndOnOneLine() {
    Verdict verdict = new Verdict(7, 42, "conn\tx", "heap\nfull");
    Verdict back = Verdict.parse(verdict.text());
    assertEquals(new Verdict(7, 42, "conn x", "heap full"), back);
    assertEquals(
        "sluice-memory-watch connector=conn x stage=7 tid=42 reason=heap full", back.line());
    assertNull(Verdict.parse("not a verdict"));
    assertNull(Verdict.parse("x\t1\tc\tr"));
  }

  @Test
  void readsTheResidentMemoryOfAProcStatusText() {
    assertEquals(
        2048L * 1024, MemoryWatch.residentBytes("Name:\tjava\nVmRSS:\t    2048 kB\nThreads: 9\n"));
    assertEquals(-1, MemoryWatch.residentBytes("Name:\tjava\n"));
  }
}
