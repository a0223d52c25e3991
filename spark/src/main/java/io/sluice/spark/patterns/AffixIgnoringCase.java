package io.sluice.spark.patterns;

import static io.sluice.spark.variant.VariantBytes.textLength;
import static io.sluice.spark.variant.VariantBytes.textStart;

import java.util.Arrays;

/** {@code startswith(lower(text), lower(affix))} (or endswith). */
final class AffixIgnoringCase extends Matcher {
  private final byte[] affix;
  private final boolean prefix;

  AffixIgnoringCase(String affix, boolean prefix) {
    this.affix = LowerCase.lower(affix);
    this.prefix = prefix;
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
      start = 0;
      length = lowered.length;
    }
    if (length < affix.length) {
      return false;
    }
    int from = prefix ? start : start + length - affix.length;
    if (lowered != null) {
      return Arrays.equals(lowered, from, from + affix.length, affix, 0, affix.length);
    }
    return LowerCase.equalsAsciiLowered(v, from, affix);
  }
}
