package io.sluice.spark.patterns;

import java.util.Arrays;
import java.util.List;

/** Exact strings: a few compared in turn, more looked up in a hash table of their bytes. */
final class Strings {
  private static final int LINEAR = 8;

  /** The strings (compared in turn), or the hash table (open addressing, null: free). */
  private final byte[][] table;

  private final boolean hashed;

  Strings(List<byte[]> strings) {
    hashed = strings.size() > LINEAR;
    if (!hashed) {
      table = strings.toArray(new byte[0][]);
      return;
    }
    int capacity = Integer.highestOneBit(strings.size() * 4 - 1) << 1; // at most 1/4 full
    table = new byte[capacity][];
    for (byte[] text : strings) {
      int slot = hash(text, 0, text.length) & (capacity - 1);
      while (table[slot] != null && !Arrays.equals(table[slot], text)) {
        slot = (slot + 1) & (capacity - 1);
      }
      table[slot] = text;
    }
  }

  boolean contains(byte[] v, int start, int length) {
    if (!hashed) {
      for (byte[] text : table) {
        if (Matcher.equalBytes(v, start, length, text)) {
          return true;
        }
      }
      return false;
    }
    int mask = table.length - 1;
    for (int slot = hash(v, start, length) & mask; table[slot] != null; slot = (slot + 1) & mask) {
      if (Matcher.equalBytes(v, start, length, table[slot])) {
        return true;
      }
    }
    return false;
  }

  private static int hash(byte[] bytes, int start, int length) {
    int h = length;
    for (int i = start; i < start + length; i++) {
      h = 31 * h + bytes[i];
    }
    return h ^ (h >>> 16);
  }
}
