package io.sluice.spark.variant;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The scan's own edges (PrunedParseTest checks it against Jackson on random documents): strings
 * read eight bytes at a time, where they end and where they hold a control character.
 */
class JsonScanTest {

  private static byte[] utf8(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void findsTheEndOfStringsOfEveryLengthAndAlignment() {
    for (int pad = 0; pad < 9; pad++) {
      for (int length = 0; length < 40; length++) {
        String doc = "{" + " ".repeat(pad) + "\"k\":\"" + "x".repeat(length) + "\",\"z\":1}";
        int[] members = JsonScan.topMembers(utf8(doc), true);
        int start = 1 + pad;
        int end = start + 6 + length; // "k":"...", up to the closing quote
        assertArrayEquals(new int[] {start, end, end + 1, end + 6}, members, doc);
      }
    }
  }

  @Test
  void refusesAControlCharacterAnywhereInAString() {
    for (int length = 1; length < 30; length++) {
      for (int at = 0; at < length; at++) {
        for (char control : new char[] {0x00, 0x01, 0x09, 0x0A, 0x1F}) {
          char[] text = "x".repeat(length).toCharArray();
          text[at] = control;
          String doc = "{\"k\":\"" + new String(text) + "\"}";
          assertSame(JsonScan.INVALID, JsonScan.topMembers(utf8(doc), true), doc);
        }
      }
    }
    assertTrue(
        JsonScan.topMembers(utf8("{\"k\":\"" + "\u007f".repeat(20) + "\"}"), true).length == 2);
  }

  @ParameterizedTest
  @ValueSource(strings = {"[1]", "\"x\"", "1", " ", ""})
  void leavesWhatItDoesNotCoverToJackson(String doc) {
    assertNull(JsonScan.topMembers(utf8(doc), true));
  }

  @Test
  void leavesDeepNestingToJackson() {
    String deep = "{\"a\":" + "[".repeat(70) + "]".repeat(70) + "}";
    assertNull(JsonScan.topMembers(utf8(deep), true));
  }
}
