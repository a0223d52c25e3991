package io.sluice.spark.patterns;

/** {@code {"exists": true}}: any leaf (the step is on a present leaf already). */
final class Exists extends Matcher {
  @Override
  boolean test(byte[] v, int pos) {
    return true;
  }
}
