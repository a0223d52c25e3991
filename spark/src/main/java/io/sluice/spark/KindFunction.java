package io.sluice.spark;

import org.apache.spark.types.variant.VariantUtil;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * {@code kind(v VARIANT) -> STRING}: the name of a value's type as {@code schema_of_variant} starts
 * it ({@code OBJECT}, {@code ARRAY}, {@code STRING}, {@code BIGINT}, {@code DOUBLE}, {@code
 * DECIMAL}, {@code BOOLEAN}, {@code VOID}, ...) without the members' types or a decimal's
 * precision; NULL for NULL.
 */
public final class KindFunction extends SimpleFunction<UTF8String> {
  private static final long serialVersionUID = 1L;
  private static final UTF8String OBJECT = UTF8String.fromString("OBJECT");
  private static final UTF8String ARRAY = UTF8String.fromString("ARRAY");
  private static final UTF8String STRING_KIND = UTF8String.fromString("STRING");

  public KindFunction() {
    super("kind", STRING, VARIANT);
  }

  public static UTF8String invoke(VariantVal v) {
    if (v == null) {
      return null;
    }
    byte[] value = v.getValue();
    int header = value[0] & 0xFF;
    switch (header & VariantUtil.BASIC_TYPE_MASK) {
      case VariantUtil.OBJECT:
        return OBJECT;
      case VariantUtil.ARRAY:
        return ARRAY;
      case VariantUtil.SHORT_STR:
        return STRING_KIND;
      default:
        return PRIMITIVE_KINDS[header >> VariantUtil.BASIC_TYPE_BITS];
    }
  }

  /** schema_of_variant's names of the primitive types, by type id (null: unknown). */
  private static final UTF8String[] PRIMITIVE_KINDS = new UTF8String[64];

  static {
    String[][] names = {
      {"NULL", "VOID"},
      {"TRUE", "BOOLEAN"},
      {"FALSE", "BOOLEAN"},
      {"INT1", "BIGINT"},
      {"INT2", "BIGINT"},
      {"INT4", "BIGINT"},
      {"INT8", "BIGINT"},
      {"DOUBLE", "DOUBLE"},
      {"DECIMAL4", "DECIMAL"},
      {"DECIMAL8", "DECIMAL"},
      {"DECIMAL16", "DECIMAL"},
      {"DATE", "DATE"},
      {"TIMESTAMP", "TIMESTAMP"},
      {"TIMESTAMP_NTZ", "TIMESTAMP_NTZ"},
      {"FLOAT", "FLOAT"},
      {"BINARY", "BINARY"},
      {"LONG_STR", "STRING"},
      {"UUID", "UUID"},
    };
    int[] ids = {
      VariantUtil.NULL, VariantUtil.TRUE, VariantUtil.FALSE, VariantUtil.INT1,
      VariantUtil.INT2, VariantUtil.INT4, VariantUtil.INT8, VariantUtil.DOUBLE,
      VariantUtil.DECIMAL4, VariantUtil.DECIMAL8, VariantUtil.DECIMAL16, VariantUtil.DATE,
      VariantUtil.TIMESTAMP, VariantUtil.TIMESTAMP_NTZ, VariantUtil.FLOAT, VariantUtil.BINARY,
      VariantUtil.LONG_STR, VariantUtil.UUID,
    };
    for (int i = 0; i < ids.length; i++) {
      PRIMITIVE_KINDS[ids[i]] = UTF8String.fromString(names[i][1]);
    }
  }
}
