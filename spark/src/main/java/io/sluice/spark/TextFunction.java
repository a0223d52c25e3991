package io.sluice.spark;

import org.apache.spark.types.variant.VariantUtil;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.unsafe.types.VariantVal;

/** {@code text(v VARIANT) -> STRING}: the text of a string value; NULL for any other. */
public final class TextFunction extends SimpleFunction<UTF8String> {
  private static final long serialVersionUID = 1L;

  public TextFunction() {
    super("text", STRING, VARIANT);
  }

  public static UTF8String invoke(VariantVal v) {
    if (v == null) {
      return null;
    }
    byte[] value = v.getValue();
    int header = value[0] & 0xFF;
    int basicType = header & VariantUtil.BASIC_TYPE_MASK;
    if (basicType == VariantUtil.SHORT_STR) {
      // The string's bytes, in place (UTF8String does not copy).
      return UTF8String.fromBytes(value, 1, header >> VariantUtil.BASIC_TYPE_BITS);
    }
    if (basicType == VariantUtil.PRIMITIVE
        && (header >> VariantUtil.BASIC_TYPE_BITS) == VariantUtil.LONG_STR) {
      int length = VariantUtil.readUnsigned(value, 1, VariantUtil.U32_SIZE);
      return UTF8String.fromBytes(value, 1 + VariantUtil.U32_SIZE, length);
    }
    return null;
  }
}
