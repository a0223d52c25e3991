package io.sluice.spark.patterns;

import org.apache.spark.sql.catalyst.util.CollationAwareUTF8String;
import org.apache.spark.unsafe.types.UTF8String;

/** Lower-casing as Spark's {@code lower()} does it, for the ignore-case matchers. */
final class LowerCase {
  private LowerCase() {}

  /**
   * {@code lower(text)} as Spark's {@code lower()} computes it for the default collation with ICU
   * case mappings ({@code spark.sql.icu.caseMappings.enabled}, the default): ASCII text byte by
   * byte, anything else through ICU.
   */
  static byte[] lower(String text) {
    return CollationAwareUTF8String.toLowerCase(UTF8String.fromString(text)).getBytes();
  }

  /**
   * The lower-cased text of the string at {@code start}, or null when the text is ASCII (then
   * lower-casing maps A-Z to a-z and nothing else, and callers compare in place).
   */
  static byte[] lowerUnlessAscii(byte[] v, int start, int length) {
    for (int i = start; i < start + length; i++) {
      if (v[i] < 0) {
        return CollationAwareUTF8String.toLowerCase(UTF8String.fromBytes(v, start, length))
            .getBytes();
      }
    }
    return null;
  }

  /** Whether {@code v[at, at + expected.length)} lower-cased (ASCII) is {@code expected}. */
  static boolean equalsAsciiLowered(byte[] v, int at, byte[] expected) {
    for (int i = 0; i < expected.length; i++) {
      byte b = v[at + i];
      if (b >= 'A' && b <= 'Z') {
        b += 'a' - 'A';
      }
      if (b != expected[i]) {
        return false;
      }
    }
    return true;
  }
}
