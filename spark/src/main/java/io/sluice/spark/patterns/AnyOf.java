package io.sluice.spark.patterns;

import static io.sluice.spark.variant.VariantBytes.textLength;
import static io.sluice.spark.variant.VariantBytes.textStart;

/** Any of a step's matchers accepts the leaf; exact strings are looked up together. */
final class AnyOf extends Matcher {
  private final Strings strings;
  private final Matcher[] others;

  AnyOf(Strings strings, Matcher[] others) {
    this.strings = strings;
    this.others = others;
  }

  @Override
  boolean test(byte[] v, int pos) {
    if (strings != null) {
      int start = textStart(v, pos);
      if (start >= 0 && strings.contains(v, start, textLength(v, pos))) {
        return true;
      }
    }
    for (Matcher matcher : others) {
      if (matcher.test(v, pos)) {
        return true;
      }
    }
    return false;
  }
}
