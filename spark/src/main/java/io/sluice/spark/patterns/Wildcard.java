package io.sluice.spark.patterns;

import static io.sluice.spark.variant.VariantBytes.textLength;
import static io.sluice.spark.variant.VariantBytes.textStart;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Arrays;

/**
 * A wildcard by {@code matchers.wildcard_matches}: the text starts with the first segment and ends
 * with the last one without overlap, and the middle ones follow in order in between, each at its
 * leftmost occurrence (linear time, no backtracking). Bytes of UTF-8 text match where its
 * characters do.
 */
final class Wildcard extends Matcher {
  private final byte[][] segments;

  Wildcard(JsonNode segments) {
    if (!segments.isArray() || segments.size() == 0) {
      throw new IllegalArgumentException("matches: a wildcard lists its segments: " + segments);
    }
    this.segments = new byte[segments.size()][];
    for (int i = 0; i < this.segments.length; i++) {
      this.segments[i] = StepCompiler.utf8(StepCompiler.requireText(segments.get(i), "wildcard"));
    }
  }

  @Override
  boolean test(byte[] v, int pos) {
    int start = textStart(v, pos);
    if (start < 0) {
      return false;
    }
    int length = textLength(v, pos);
    if (segments.length == 1) {
      return equalBytes(v, start, length, segments[0]);
    }
    byte[] first = segments[0];
    byte[] last = segments[segments.length - 1];
    int end = start + length - last.length;
    if (end < start + first.length
        || !Arrays.equals(v, start, start + first.length, first, 0, first.length)
        || !Arrays.equals(v, end, end + last.length, last, 0, last.length)) {
      return false;
    }
    int position = start + first.length;
    for (int i = 1; i < segments.length - 1; i++) {
      int found = indexOf(v, segments[i], position, end);
      if (found < 0) {
        return false;
      }
      position = found + segments[i].length;
    }
    return true;
  }

  /** Where {@code needle} first lies inside {@code v[from, to)}, or -1. */
  private static int indexOf(byte[] v, byte[] needle, int from, int to) {
    int lastStart = to - needle.length;
    if (needle.length == 0) {
      return from <= to ? from : -1;
    }
    byte head = needle[0];
    for (int i = from; i <= lastStart; i++) {
      if (v[i] == head && Arrays.equals(v, i, i + needle.length, needle, 0, needle.length)) {
        return i;
      }
    }
    return -1;
  }
}
