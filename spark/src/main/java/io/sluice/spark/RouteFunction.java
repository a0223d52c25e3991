package io.sluice.spark;

import io.sluice.spark.patterns.Routes;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * {@code route(node VARIANT, routes STRING) -> ARRAY<INT>}: the targets of a bus's rules whose
 * patterns hold on one top-level field's value ({@code node}; NULL: the field is missing), many
 * rules decided in one call with an index on their exact values; never NULL. {@code routes} is JSON
 * written by {@code pipelines.patterns.route_plans} (format and semantics: {@link Routes}),
 * compiled once per distinct literal.
 */
public final class RouteFunction extends SimpleFunction<ArrayData> {
  private static final long serialVersionUID = 1L;

  public RouteFunction() {
    super("route", null, VARIANT, STRING);
  }

  /** Made when Spark asks (ArrayType needs more of Spark than loading the catalog does). */
  @Override
  public DataType resultType() {
    return DataTypes.createArrayType(DataTypes.IntegerType, true);
  }

  @Override
  public boolean isResultNullable() {
    return false;
  }

  public static ArrayData invoke(VariantVal node, UTF8String routes) {
    return UnsafeArrayData.fromPrimitiveArray(Routes.route(node, routes));
  }
}
