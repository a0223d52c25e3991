package io.sluice.spark;

import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.VariantType$;

/**
 * A function that is its own bound form: its name and types are fixed. Subclasses add the static
 * "magic" {@code invoke} method Spark calls from generated code.
 */
abstract class SimpleFunction<R> implements UnboundFunction, ScalarFunction<R> {
  private static final long serialVersionUID = 1L;
  static final DataType VARIANT = VariantType$.MODULE$;
  static final DataType STRING = DataTypes.StringType;

  private final String name;
  private final DataType resultType;
  private final DataType[] inputTypes;

  SimpleFunction(String name, DataType resultType, DataType... inputTypes) {
    this.name = name;
    this.resultType = resultType;
    this.inputTypes = inputTypes;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public DataType resultType() {
    return resultType;
  }

  @Override
  public DataType[] inputTypes() {
    return inputTypes.clone();
  }

  @Override
  public BoundFunction bind(StructType inputType) {
    if (inputType.fields().length != inputTypes.length) {
      throw new UnsupportedOperationException(
          String.format(
              "%s takes %d argument(s), got %d",
              name, inputTypes.length, inputType.fields().length));
    }
    return this;
  }

  @Override
  public String description() {
    return name;
  }
}
