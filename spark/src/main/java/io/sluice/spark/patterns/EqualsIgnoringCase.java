package io.sluice.spark.patterns;

import static io.sluice.spark.variant.VariantBytes.textLength;
import static io.sluice.spark.variant.VariantBytes.textStart;

import java.util.Arrays;

/** {@code lower(text) = LowerCase.lower(operand)}. */
final class EqualsIgnoringCase extends Matcher {
  private final byte[] expected;

  EqualsIgnoringCase(String expected) {
    this.expected = LowerCase.lower(expected);
  }

  @Override
  boolean test(byte[] v, int pos) {
    int start = textStart(v, pos);
    if (start < 0) {
      return false;
    }
    int length = textLength(v, pos);
    byte[] lowered = LowerCase.lowerUnlessAscii(v, start, length);
    if (lowered != null) {
      return Arrays.equals(lowered, expected);
    }
    return length == expected.length && LowerCase.equalsAsciiLowered(v, start, expected);
  }
}
