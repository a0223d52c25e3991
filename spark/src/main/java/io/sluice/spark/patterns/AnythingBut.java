package io.sluice.spark.patterns;

/** {@code {"anything-but": [matchers]}}: a leaf none of the matchers accepts. */
final class AnythingBut extends Matcher {
  private final AnyOf excluded;

  AnythingBut(AnyOf excluded) {
    this.excluded = excluded;
  }

  @Override
  boolean test(byte[] v, int pos) {
    return !excluded.test(v, pos);
  }
}
