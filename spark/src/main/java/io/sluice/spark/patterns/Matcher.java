package io.sluice.spark.patterns;

import java.util.Arrays;

/** A test of a leaf: a present value, neither object nor array. */
abstract class Matcher {
  abstract boolean test(byte[] v, int pos);

  static boolean equalBytes(byte[] v, int start, int length, byte[] expected) {
    return length == expected.length
        && Arrays.equals(v, start, start + length, expected, 0, expected.length);
  }
}
