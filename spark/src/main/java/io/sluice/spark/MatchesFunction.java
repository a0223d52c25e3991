package io.sluice.spark;

import io.sluice.spark.patterns.EventPatterns;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * {@code matches(node VARIANT, steps STRING) -> BOOLEAN}: whether the steps of an event-pattern
 * rule that start at one top-level field hold below that field's value ({@code node}; NULL: the
 * field is missing), with aws/event-ruler's array-consistent semantics; never NULL. {@code steps}
 * is JSON written by {@code pipelines.patterns} (format and semantics: {@link EventPatterns}),
 * compiled once per distinct literal.
 */
public final class MatchesFunction extends SimpleFunction<Boolean> {
  private static final long serialVersionUID = 1L;

  public MatchesFunction() {
    super("matches", DataTypes.BooleanType, VARIANT, STRING);
  }

  @Override
  public boolean isResultNullable() {
    return false;
  }

  /** Spark passes a NULL argument as a Java null (no null propagation): a missing field. */
  public static boolean invoke(VariantVal node, UTF8String steps) {
    return EventPatterns.matches(node, steps);
  }
}
