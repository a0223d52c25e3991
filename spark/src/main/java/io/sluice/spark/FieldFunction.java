package io.sluice.spark;

import io.sluice.spark.variant.ObjectLayout;
import java.util.Arrays;
import org.apache.spark.types.variant.VariantUtil;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * {@code field(v VARIANT, key STRING) -> VARIANT}: the member {@code key} of an object, sharing the
 * object's metadata; NULL when {@code v} is NULL, is not an object, or has no such member. Keys are
 * compared byte for byte (UTF-8), as {@code variant_get} does.
 */
public final class FieldFunction extends SimpleFunction<VariantVal> {
  private static final long serialVersionUID = 1L;

  public FieldFunction() {
    super("field", VARIANT, VARIANT, STRING);
  }

  public static VariantVal invoke(VariantVal v, UTF8String key) {
    if (v == null || key == null) {
      return null;
    }
    byte[] value = v.getValue();
    byte[] metadata = v.getMetadata();
    int at = ObjectLayout.fieldPosition(value, metadata, key);
    if (at < 0) {
      return null;
    }
    int size = VariantUtil.valueSize(value, at);
    return new VariantVal(Arrays.copyOfRange(value, at, at + size), metadata);
  }
}
