package io.sluice.spark.patterns;

import static io.sluice.spark.variant.VariantBytes.textLength;
import static io.sluice.spark.variant.VariantBytes.textStart;

import java.util.Arrays;

/** A string starting (or ending) with the operand, byte for byte. */
final class Affix extends Matcher {
  private final byte[] affix;
  private final boolean prefix;

  Affix(byte[] affix, boolean prefix) {
    this.affix = affix;
    this.prefix = prefix;
  }

  @Override
  boolean test(byte[] v, int pos) {
    int start = textStart(v, pos);
    if (start < 0) {
      return false;
    }
    int length = textLength(v, pos);
    if (length < affix.length) {
      return false;
    }
    int from = prefix ? start : start + length - affix.length;
    return Arrays.equals(v, from, from + affix.length, affix, 0, affix.length);
  }
}
