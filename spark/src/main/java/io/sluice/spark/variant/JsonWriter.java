package io.sluice.spark.variant;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.spark.types.variant.VariantUtil;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Writes JSON text as UTF-8 bytes: VARIANT values as {@code Variant.toJson} writes them, and
 * strings escaped as Jackson's default generator escapes them: the quote, the backslash and control
 * characters (the short escapes for newline, return, tab, backspace and form feed, else a
 * six-character unicode escape with upper-case hex digits); nothing else, non-ASCII text included.
 */
public final class JsonWriter {
  private static final byte[] HEX = "0123456789ABCDEF".getBytes(StandardCharsets.US_ASCII);
  private byte[] buffer;
  private int size;

  /** A writer whose buffer starts with room for {@code capacity} bytes. */
  public JsonWriter(int capacity) {
    buffer = new byte[Math.max(capacity, 16)];
  }

  /** The text written so far (sharing the buffer: write nothing after). */
  public UTF8String result() {
    return UTF8String.fromBytes(buffer, 0, size);
  }

  /** The bytes written so far. */
  public int size() {
    return size;
  }

  /** Forget what was written after the first {@code n} bytes. */
  public void truncate(int n) {
    size = Math.min(size, Math.max(n, 0));
  }

  private void room(int more) {
    if (size + more > buffer.length) {
      buffer = Arrays.copyOf(buffer, Math.max(buffer.length * 2, size + more));
    }
  }

  private void put(byte b) {
    room(1);
    buffer[size++] = b;
  }

  /** ASCII text as is. */
  public void raw(String ascii) {
    put(ascii);
  }

  /** UTF-8 text as is. */
  public void raw(UTF8String text) {
    byte[] bytes = text.getBytes();
    room(bytes.length);
    System.arraycopy(bytes, 0, buffer, size, bytes.length);
    size += bytes.length;
  }

  private void put(String ascii) {
    int n = ascii.length();
    room(n);
    for (int i = 0; i < n; i++) {
      buffer[size++] = (byte) ascii.charAt(i);
    }
  }

  /** A JSON string literal of the UTF-8 bytes {@code from[offset, offset + length)}. */
  public void string(byte[] from, int offset, int length) {
    room(length + 2);
    buffer[size++] = '"';
    int end = offset + length;
    for (int i = offset; i < end; i++) {
      byte b = from[i];
      if ((b < 0 || b >= 0x20) && b != '"' && b != '\\') { // text, non-ASCII bytes included
        if (size == buffer.length) {
          room(1);
        }
        buffer[size++] = b;
      } else {
        escape(b);
      }
    }
    put((byte) '"');
  }

  private void escape(byte b) {
    switch (b) {
      case '"':
        put("\\\"");
        break;
      case '\\':
        put("\\\\");
        break;
      case '\n':
        put("\\n");
        break;
      case '\r':
        put("\\r");
        break;
      case '\t':
        put("\\t");
        break;
      case '\b':
        put("\\b");
        break;
      case '\f':
        put("\\f");
        break;
      default:
        room(6);
        buffer[size++] = '\\';
        buffer[size++] = 'u';
        buffer[size++] = '0';
        buffer[size++] = '0';
        buffer[size++] = HEX[(b >> 4) & 0xF];
        buffer[size++] = HEX[b & 0xF];
    }
  }

  /**
   * The JSON text of the VARIANT value at {@code pos}; false (and nothing reliable written) when it
   * holds a type JSON has no literal for.
   */
  public boolean value(byte[] value, byte[] metadata, int pos) {
    int header = value[pos] & 0xFF;
    int basicType = header & VariantUtil.BASIC_TYPE_MASK;
    int typeInfo = header >> VariantUtil.BASIC_TYPE_BITS;
    switch (basicType) {
      case VariantUtil.SHORT_STR:
        string(value, pos + 1, typeInfo);
        return true;
      case VariantUtil.OBJECT:
        return object(value, metadata, pos);
      case VariantUtil.ARRAY:
        return array(value, metadata, pos, typeInfo);
      default:
        return primitive(value, pos, typeInfo);
    }
  }

  private boolean primitive(byte[] value, int pos, int typeInfo) {
    switch (typeInfo) {
      case VariantUtil.NULL:
        put("null");
        return true;
      case VariantUtil.TRUE:
        put("true");
        return true;
      case VariantUtil.FALSE:
        put("false");
        return true;
      case VariantUtil.INT1:
      case VariantUtil.INT2:
      case VariantUtil.INT4:
      case VariantUtil.INT8:
        put(Long.toString(VariantUtil.getLong(value, pos)));
        return true;
      case VariantUtil.DOUBLE:
        double d = VariantUtil.getDouble(value, pos);
        if (!Double.isFinite(d)) {
          return false;
        }
        put(Double.toString(d));
        return true;
      case VariantUtil.DECIMAL4:
      case VariantUtil.DECIMAL8:
      case VariantUtil.DECIMAL16:
        put(VariantUtil.getDecimal(value, pos).toPlainString());
        return true;
      case VariantUtil.LONG_STR:
        int length = VariantUtil.readUnsigned(value, pos + 1, VariantUtil.U32_SIZE);
        string(value, pos + 1 + VariantUtil.U32_SIZE, length);
        return true;
      default:
        return false;
    }
  }

  private boolean object(byte[] value, byte[] metadata, int pos) {
    ObjectLayout object = new ObjectLayout(value, metadata, pos);
    put((byte) '{');
    for (int i = 0; i < object.size; i++) {
      if (i > 0) {
        put((byte) ',');
      }
      int id = object.id(i);
      int from = object.keyStart(id);
      string(metadata, from, object.keyStart(id + 1) - from);
      put((byte) ':');
      if (!value(value, metadata, object.valueAt(i))) {
        return false;
      }
    }
    put((byte) '}');
    return true;
  }

  private boolean array(byte[] value, byte[] metadata, int pos, int typeInfo) {
    boolean large = ((typeInfo >> 2) & 0x1) != 0;
    int offsetSize = (typeInfo & 0x3) + 1;
    int sizeBytes = large ? VariantUtil.U32_SIZE : 1;
    int elements = VariantUtil.readUnsigned(value, pos + 1, sizeBytes);
    int offsetStart = pos + 1 + sizeBytes;
    int dataStart = offsetStart + (elements + 1) * offsetSize;
    put((byte) '[');
    for (int i = 0; i < elements; i++) {
      if (i > 0) {
        put((byte) ',');
      }
      int at =
          dataStart + VariantUtil.readUnsigned(value, offsetStart + offsetSize * i, offsetSize);
      if (!value(value, metadata, at)) {
        return false;
      }
    }
    put((byte) ']');
    return true;
  }
}
