package io.sluice.spark.variant;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/** The UTF-8 validity check of {@code parse}'s fast path. */
public final class Utf8 {
  private static final VarHandle LONGS =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  private Utf8() {}

  /**
   * Whether {@code bytes[0, n)} is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates,
   * nothing above U+10FFFF), which is exactly what Java's decoder reads without replacing anything.
   * ASCII runs are skipped 8 bytes at a time: UTF8String.isValid decodes every character and costs
   * as much as the parse.
   */
  public static boolean isValid(byte[] bytes, int n) {
    int i = 0;
    while (i < n) {
      if (i + 8 <= n && (((long) LONGS.get(bytes, i)) & 0x8080808080808080L) == 0) {
        i += 8;
        continue;
      }
      int b = bytes[i] & 0xFF;
      if (b < 0x80) {
        i++;
        continue;
      }
      int more;
      int low = 0x80;
      int high = 0xBF;
      if (b >= 0xC2 && b <= 0xDF) {
        more = 1;
      } else if (b >= 0xE0 && b <= 0xEF) {
        more = 2;
        if (b == 0xE0) {
          low = 0xA0; // no overlong three-byte forms
        } else if (b == 0xED) {
          high = 0x9F; // no UTF-16 surrogates
        }
      } else if (b >= 0xF0 && b <= 0xF4) {
        more = 3;
        if (b == 0xF0) {
          low = 0x90; // no overlong four-byte forms
        } else if (b == 0xF4) {
          high = 0x8F; // nothing above U+10FFFF
        }
      } else {
        return false;
      }
      if (i + more >= n) {
        return false; // cut short
      }
      int second = bytes[i + 1] & 0xFF;
      if (second < low || second > high) {
        return false;
      }
      for (int k = 2; k <= more; k++) {
        if ((bytes[i + k] & 0xC0) != 0x80) {
          return false;
        }
      }
      i += more + 1;
    }
    return true;
  }
}
