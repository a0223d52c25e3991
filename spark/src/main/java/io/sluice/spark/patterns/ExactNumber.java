package io.sluice.spark.patterns;

import static io.sluice.spark.variant.VariantBytes.number;

/** {@code {"number": d}}: a number equal to {@code d} as a DOUBLE. */
final class ExactNumber extends Matcher {
  private final double value;

  ExactNumber(double value) {
    this.value = value;
  }

  @Override
  boolean test(byte[] v, int pos) {
    return number(v, pos) == value; // NaN (not a number) never equals; value is finite
  }
}
