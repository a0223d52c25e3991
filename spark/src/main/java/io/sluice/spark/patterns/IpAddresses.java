package io.sluice.spark.patterns;

/** IP addresses in a string value's UTF-8 bytes, read as {@code ip.parse_ip} reads them. */
final class IpAddresses {
  private IpAddresses() {}

  /**
   * The value of a dotted-quad IPv4 address ({@code ip.IPV4_REGEX}: four parts 0-255 in decimal, no
   * leading zeros), or -1.
   */
  static long ipv4(byte[] v, int start, int length) {
    if (length < 7 || length > 15) {
      return -1;
    }
    long value = 0;
    int i = start;
    int end = start + length;
    for (int parts = 1; ; parts++) {
      int from = i;
      int part = 0;
      while (i < end && i - from < 4 && v[i] >= '0' && v[i] <= '9') {
        part = part * 10 + (v[i] - '0');
        i++;
      }
      int digits = i - from;
      if (digits == 0 || digits > 3 || part > 255 || (digits > 1 && v[from] == '0')) {
        return -1;
      }
      value = value << 8 | part;
      if (parts == 4) {
        return i == end ? value : -1;
      }
      if (i == end || v[i] != '.') {
        return -1;
      }
      i++;
    }
  }

  static final int NOT_IPV6 = -2;

  /**
   * Whether {@code v[start, start + length)} is an IPv6 address ({@code ip.IPV6_REGEX}: eight
   * groups of 1-4 hex digits, or 7 at most around exactly one {@code ::}): {@link #NOT_IPV6} when
   * not, else where its {@code ::} is ({@code -1}: none).
   */
  static int ipv6Gap(byte[] v, int start, int length) {
    if (length < 2 || length > 39) {
      return NOT_IPV6;
    }
    int end = start + length;
    int gap = -1;
    for (int i = start; i + 1 < end; i++) {
      if (v[i] == ':' && v[i + 1] == ':') {
        if (gap >= 0) {
          return NOT_IPV6; // a second "::" (":::" holds two)
        }
        gap = i;
      }
    }
    if (gap < 0) {
      return groupCount(v, start, end) == 8 ? -1 : NOT_IPV6;
    }
    int head = gap == start ? 0 : groupCount(v, start, gap);
    int tail = gap + 2 == end ? 0 : groupCount(v, gap + 2, end);
    return head >= 0 && tail >= 0 && head + tail <= 7 ? gap : NOT_IPV6;
  }

  /**
   * How many hex groups of 1-4 digits, separated by single colons, {@code v[from, to)} holds; -1
   * when it is not such a list.
   */
  private static int groupCount(byte[] v, int from, int to) {
    int count = 0;
    int digits = 0;
    for (int i = from; i < to; i++) {
      if (v[i] == ':') {
        if (digits == 0) {
          return -1;
        }
        count++;
        digits = 0;
      } else if (hexDigit(v[i]) < 0 || ++digits > 4) {
        return -1;
      }
    }
    return digits == 0 ? -1 : count + 1;
  }

  /**
   * The high ({@code half} 0) or low (1) 64 bits of the IPv6 address {@code v[start, start +
   * length)}, whose {@code ::} is at {@code gap} (see {@link #ipv6Gap}): the groups after it are
   * the last ones, zeros stand between.
   */
  static long ipv6Bits(byte[] v, int start, int length, int gap, int half) {
    int end = start + length;
    long bits = 0;
    int index = 0; // of the group read next, 0-7
    int i = start;
    while (i < end) {
      if (i == gap) {
        index = 8 - (gap + 2 == end ? 0 : groupCount(v, gap + 2, end));
        i += 2;
        continue;
      }
      int group = 0;
      while (i < end && v[i] != ':') {
        group = group << 4 | hexDigit(v[i]);
        i++;
      }
      if (index / 4 == half) {
        bits |= (long) group << (16 * (3 - index % 4));
      }
      index++;
      if (i < end && i != gap) {
        i++; // the colon between two groups
      }
    }
    return bits;
  }

  private static int hexDigit(byte b) {
    if (b >= '0' && b <= '9') {
      return b - '0';
    }
    if (b >= 'a' && b <= 'f') {
      return b - 'a' + 10;
    }
    if (b >= 'A' && b <= 'F') {
      return b - 'A' + 10;
    }
    return -1;
  }
}
