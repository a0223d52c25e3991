package io.sluice.spark;

import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.types.variant.VariantUtil;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * {@code number(v VARIANT) -> DOUBLE}: a number as a DOUBLE, exactly as {@code try_variant_get(v,
 * '$', 'double')} gives it; NaN for anything else (strings, booleans, null, objects, arrays, SQL
 * NULL). JSON has no NaN, so NaN means "not a number".
 */
public final class NumberFunction extends SimpleFunction<Double> {
  private static final long serialVersionUID = 1L;

  public NumberFunction() {
    super("number", DataTypes.DoubleType, VARIANT);
  }

  @Override
  public boolean isResultNullable() {
    return false;
  }

  public static double invoke(VariantVal v) {
    if (v == null) {
      return Double.NaN;
    }
    byte[] value = v.getValue();
    int header = value[0] & 0xFF;
    if ((header & VariantUtil.BASIC_TYPE_MASK) != VariantUtil.PRIMITIVE) {
      return Double.NaN;
    }
    switch (header >> VariantUtil.BASIC_TYPE_BITS) {
      case VariantUtil.INT1:
      case VariantUtil.INT2:
      case VariantUtil.INT4:
      case VariantUtil.INT8:
        return (double) VariantUtil.getLong(value, 0);
      case VariantUtil.DOUBLE:
        return VariantUtil.getDouble(value, 0);
      case VariantUtil.FLOAT:
        return (double) VariantUtil.getFloat(value, 0);
      case VariantUtil.DECIMAL4:
      case VariantUtil.DECIMAL8:
      case VariantUtil.DECIMAL16:
        // What Spark's cast of a DECIMAL to DOUBLE computes (correctly rounded).
        return VariantUtil.getDecimal(value, 0).doubleValue();
      default:
        return Double.NaN;
    }
  }
}
