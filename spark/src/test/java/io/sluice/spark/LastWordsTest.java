package io.sluice.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class LastWordsTest {
  private static final String THREAD =
      "Executor task launch worker for task 0.0 in stage %d.0 (TID %d)";

  @Test
  void namesThePoolOfTheDyingTasksStageEvenAfterTheStageEnded() {
    LastWords words = new LastWords();
    words.remember(66, "offender-a23f17");
    assertEquals(
        "sluice-last-words connector=offender-a23f17 stage=66 tid=94 thread="
            + String.format(THREAD, 66, 94),
        words.words(String.format(THREAD, 66, 94), 0));
  }

  @Test
  void waitsForAStageItHasNotHeardOfYet() throws InterruptedException {
    LastWords words = new LastWords();
    Thread late =
        new Thread(
            () -> {
              try {
                Thread.sleep(300);
              } catch (InterruptedException e) {
                return;
              }
              words.remember(7, "late-pool");
            });
    late.start();
    assertTrue(words.words(String.format(THREAD, 7, 9), 3_000).contains("connector=late-pool "));
    late.join();
  }

  @Test
  void namesNoConnectorForAStageNeverHeardOfOrAnotherThread() {
    LastWords words = new LastWords();
    assertFalse(words.words(String.format(THREAD, 5, 1), 100).contains("connector="));
    assertEquals("sluice-last-words thread=main", words.words("main", 0));
  }

  @Test
  void keepsTheNewestStagesOnly() {
    LastWords words = new LastWords();
    for (int stage = 0; stage <= LastWords.MAX_STAGES; stage++) {
      words.remember(stage, "pool-" + stage);
    }
    assertFalse(words.words(String.format(THREAD, 0, 1), 0).contains("connector="));
    assertTrue(words.words(String.format(THREAD, 1, 1), 0).contains("connector=pool-1 "));
  }
}
