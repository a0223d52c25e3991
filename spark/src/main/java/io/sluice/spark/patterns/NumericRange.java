package io.sluice.spark.patterns;

import static io.sluice.spark.variant.VariantBytes.number;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * {@code {"numeric": [lower, lowerInclusive, upper, upperInclusive]}}: a finite number within the
 * bounds (null: unbounded).
 */
final class NumericRange extends Matcher {
  private final double lower;
  private final boolean lowerInclusive;
  private final double upper;
  private final boolean upperInclusive;

  NumericRange(JsonNode bounds) {
    JsonNode low = bounds.path(0);
    JsonNode high = bounds.path(2);
    lower = low.isNull() ? Double.NEGATIVE_INFINITY : StepCompiler.requireNumber(low, "numeric");
    lowerInclusive = bounds.path(1).asBoolean(false) && !low.isNull();
    upper = high.isNull() ? Double.POSITIVE_INFINITY : StepCompiler.requireNumber(high, "numeric");
    upperInclusive = bounds.path(3).asBoolean(false) && !high.isNull();
  }

  @Override
  boolean test(byte[] v, int pos) {
    double d = number(v, pos);
    if (!Double.isFinite(d)) {
      return false; // not a number (NaN) or not finite
    }
    boolean above = d > lower || (lowerInclusive && d == lower);
    boolean below = d < upper || (upperInclusive && d == upper);
    return above && below;
  }
}
