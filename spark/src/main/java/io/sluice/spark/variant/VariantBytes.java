package io.sluice.spark.variant;

import java.math.BigDecimal;
import java.util.Arrays;
import org.apache.spark.types.variant.VariantUtil;

/**
 * Reads of the VARIANT encoding at a position of a value's bytes, in place: a value's type, a
 * string's bytes, a number, an object's member. Nothing is decoded or allocated except where a
 * method says so.
 */
public final class VariantBytes {
  private VariantBytes() {}

  /** The basic type (primitive, short string, object, array) of the value at {@code pos}. */
  public static int basicType(byte[] v, int pos) {
    return v[pos] & VariantUtil.BASIC_TYPE_MASK;
  }

  /** A present value that is neither an object nor an array. */
  public static boolean isLeaf(byte[] v, int pos) {
    if (pos < 0) {
      return false;
    }
    int type = basicType(v, pos);
    return type != VariantUtil.OBJECT && type != VariantUtil.ARRAY;
  }

  /** The primitive type id of the value at {@code pos}, or -1 when it is not a primitive. */
  public static int primitiveType(byte[] v, int pos) {
    int header = v[pos] & 0xFF;
    return (header & VariantUtil.BASIC_TYPE_MASK) == VariantUtil.PRIMITIVE
        ? header >> VariantUtil.BASIC_TYPE_BITS
        : -1;
  }

  /** Where a string value's UTF-8 bytes start, or -1 when the value is not a string. */
  public static int textStart(byte[] v, int pos) {
    int header = v[pos] & 0xFF;
    if ((header & VariantUtil.BASIC_TYPE_MASK) == VariantUtil.SHORT_STR) {
      return pos + 1;
    }
    if (header >> VariantUtil.BASIC_TYPE_BITS == VariantUtil.LONG_STR
        && (header & VariantUtil.BASIC_TYPE_MASK) == VariantUtil.PRIMITIVE) {
      return pos + 1 + VariantUtil.U32_SIZE;
    }
    return -1;
  }

  /** The byte length of the string value at {@code pos} (see {@link #textStart}). */
  public static int textLength(byte[] v, int pos) {
    int header = v[pos] & 0xFF;
    if ((header & VariantUtil.BASIC_TYPE_MASK) == VariantUtil.SHORT_STR) {
      return header >> VariantUtil.BASIC_TYPE_BITS;
    }
    return VariantUtil.readUnsigned(v, pos + 1, VariantUtil.U32_SIZE);
  }

  private static final double[] POWERS_OF_TEN = new double[23];

  static {
    POWERS_OF_TEN[0] = 1;
    for (int i = 1; i < POWERS_OF_TEN.length; i++) {
      POWERS_OF_TEN[i] = POWERS_OF_TEN[i - 1] * 10;
    }
  }

  /**
   * The number at {@code pos} as a DOUBLE, as {@code NumberFunction} (and {@code try_variant_get(v,
   * '$', 'double')}) gives it; NaN when the value is not a number. Decimals whose unscaled value
   * and power of ten are exact doubles are divided (what {@link BigDecimal#doubleValue} does for
   * them, correctly rounded), without a BigDecimal.
   */
  public static double number(byte[] v, int pos) {
    switch (primitiveType(v, pos)) {
      case VariantUtil.INT1:
      case VariantUtil.INT2:
      case VariantUtil.INT4:
      case VariantUtil.INT8:
        return (double) VariantUtil.getLong(v, pos);
      case VariantUtil.DOUBLE:
        return VariantUtil.getDouble(v, pos);
      case VariantUtil.FLOAT:
        return (double) VariantUtil.getFloat(v, pos);
      case VariantUtil.DECIMAL4:
        return decimal(v, pos, littleEndian(v, pos + 2, 4));
      case VariantUtil.DECIMAL8:
        return decimal(v, pos, littleEndian(v, pos + 2, 8));
      case VariantUtil.DECIMAL16:
        return VariantUtil.getDecimal(v, pos).doubleValue();
      default:
        return Double.NaN;
    }
  }

  private static double decimal(byte[] v, int pos, long unscaled) {
    int scale = v[pos + 1] & 0xFF;
    if (Math.abs(unscaled) < 1L << 52) {
      if (scale == 0) {
        return (double) unscaled;
      }
      if (scale < POWERS_OF_TEN.length) {
        return (double) unscaled / POWERS_OF_TEN[scale];
      }
    }
    return VariantUtil.getDecimal(v, pos).doubleValue();
  }

  /** The signed little-endian integer of {@code size} bytes at {@code at}. */
  private static long littleEndian(byte[] v, int at, int size) {
    long result = 0;
    for (int i = size - 1; i >= 0; i--) {
      result = (result << 8) | (v[at + i] & 0xFF);
    }
    int unused = 64 - 8 * size;
    return (result << unused) >> unused;
  }

  /**
   * Where the member {@code key} of the object at {@code pos} starts, or -1 when the value is
   * missing, not an object, or has no such member. Small objects are searched in order, larger ones
   * by a binary search over their keys, sorted in Java string order (as Spark's {@code
   * Variant.getFieldByKey} searches them), comparing UTF-8 bytes without decoding them.
   */
  public static int member(byte[] v, byte[] m, int pos, byte[] key) {
    if (pos < 0 || basicType(v, pos) != VariantUtil.OBJECT) {
      return -1;
    }
    int typeInfo = (v[pos] & 0xFF) >> VariantUtil.BASIC_TYPE_BITS;
    int sizeBytes = ((typeInfo >> 4) & 0x1) != 0 ? VariantUtil.U32_SIZE : 1;
    int idSize = ((typeInfo >> 2) & 0x3) + 1;
    int offsetSize = (typeInfo & 0x3) + 1;
    int size = VariantUtil.readUnsigned(v, pos + 1, sizeBytes);
    int ids = pos + 1 + sizeBytes;
    int offsets = ids + size * idSize;
    int data = offsets + (size + 1) * offsetSize;
    int metaOffsetSize = ((m[0] >> 6) & 0x3) + 1;
    int dictionarySize = VariantUtil.readUnsigned(m, 1, metaOffsetSize);
    int strings = 1 + (dictionarySize + 2) * metaOffsetSize;
    int low = 0;
    int high = size - 1;
    boolean linear = size <= ObjectLayout.LINEAR_SEARCH_FIELDS;
    while (low <= high) {
      int i = linear ? low : (low + high) >>> 1;
      int id = VariantUtil.readUnsigned(v, ids + i * idSize, idSize);
      int from =
          strings + VariantUtil.readUnsigned(m, 1 + (id + 1) * metaOffsetSize, metaOffsetSize);
      int to = strings + VariantUtil.readUnsigned(m, 1 + (id + 2) * metaOffsetSize, metaOffsetSize);
      int order = compareKeys(m, from, to, key);
      if (order == 0) {
        return data + VariantUtil.readUnsigned(v, offsets + i * offsetSize, offsetSize);
      }
      if (linear || order < 0) {
        low = i + 1;
      } else {
        high = i - 1;
      }
    }
    return -1;
  }

  /**
   * The order of the UTF-8 key {@code m[from, to)} against {@code key} as Java orders the decoded
   * strings (UTF-16 code units): byte order is code point order, except that code points past
   * U+FFFF (four-byte sequences, surrogate pairs in UTF-16) sort before U+E000..U+FFFF (three-byte
   * sequences led by EE or EF). Only the first differing byte decides, and it starts a character in
   * both keys or lies in characters of one length.
   */
  public static int compareKeys(byte[] m, int from, int to, byte[] key) {
    int length = to - from;
    int common = Math.min(length, key.length);
    int differs = Arrays.mismatch(m, from, from + common, key, 0, common);
    if (differs < 0) {
      return Integer.compare(length, key.length);
    }
    return Integer.compare(utf16Rank(m[from + differs]), utf16Rank(key[differs]));
  }

  private static int utf16Rank(byte b) {
    int x = b & 0xFF;
    if (x < 0xEE) {
      return x;
    }
    return x >= 0xF0 ? x - 2 : x + 5; // F0..F4 -> EE..F2, EE..EF -> F3..F4
  }
}
