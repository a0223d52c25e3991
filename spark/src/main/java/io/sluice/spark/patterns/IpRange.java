package io.sluice.spark.patterns;

import static io.sluice.spark.variant.VariantBytes.textLength;
import static io.sluice.spark.variant.VariantBytes.textStart;

/**
 * A string holding an IP address (as {@code ip.parse_ip} reads it) between two addresses of one
 * version, inclusive. Keys are {@code ip.ip_key}'s: {@code "4:"} and 8 hex digits, or {@code "6:"}
 * and 32.
 */
final class IpRange extends Matcher {
  private final int version;
  private final long lowHigh;
  private final long lowLow;
  private final long highHigh;
  private final long highLow;

  IpRange(String low, String high) {
    version = keyVersion(low);
    if (keyVersion(high) != version) {
      throw new IllegalArgumentException("matches: an IP range of two versions: " + low + high);
    }
    lowHigh = keyPart(low, 0);
    lowLow = keyPart(low, 1);
    highHigh = keyPart(high, 0);
    highLow = keyPart(high, 1);
  }

  private static int keyVersion(String key) {
    if (key.startsWith("4:") && key.length() == 10) {
      return 4;
    }
    if (key.startsWith("6:") && key.length() == 34) {
      return 6;
    }
    throw new IllegalArgumentException("matches: not an IP key: " + key);
  }

  /** The high (0) or low (1) 64 bits of a key's value (an IPv4 value is all low bits). */
  private static long keyPart(String key, int part) {
    String digits = key.substring(2);
    if (digits.length() == 8) {
      return part == 0 ? 0 : Long.parseUnsignedLong(digits, 16);
    }
    return Long.parseUnsignedLong(digits.substring(16 * part, 16 * part + 16), 16);
  }

  @Override
  boolean test(byte[] v, int pos) {
    int start = textStart(v, pos);
    if (start < 0) {
      return false;
    }
    int length = textLength(v, pos);
    long high;
    long low;
    if (version == 4) {
      low = IpAddresses.ipv4(v, start, length);
      if (low < 0) {
        return false;
      }
      high = 0;
    } else {
      int gap = IpAddresses.ipv6Gap(v, start, length);
      if (gap == IpAddresses.NOT_IPV6) {
        return false;
      }
      high = IpAddresses.ipv6Bits(v, start, length, gap, 0);
      low = IpAddresses.ipv6Bits(v, start, length, gap, 1);
    }
    return compare(high, low, lowHigh, lowLow) >= 0 && compare(high, low, highHigh, highLow) <= 0;
  }

  private static int compare(long high, long low, long otherHigh, long otherLow) {
    int order = Long.compareUnsigned(high, otherHigh);
    return order != 0 ? order : Long.compareUnsigned(low, otherLow);
  }
}
