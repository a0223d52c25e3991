package io.sluice.spark;

import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * {@code time(ts TIMESTAMP) -> STRING}: a timestamp as RFC 3339 text in UTC, a CloudEvent's {@code
 * time} ({@link TimeText}).
 *
 * <p>A NULL timestamp must not reach it: Spark passes a primitive argument without its NULL flag,
 * so callers guard it ({@code CASE WHEN ts IS NOT NULL THEN time(ts) END}).
 */
public final class TimeFunction extends SimpleFunction<UTF8String> {
  private static final long serialVersionUID = 1L;

  public TimeFunction() {
    super("time", STRING, DataTypes.TimestampType);
  }

  @Override
  public boolean isResultNullable() {
    return false;
  }

  @Override
  public String description() {
    return "time(ts TIMESTAMP) -> STRING: RFC 3339 text in UTC";
  }

  /** The text of {@code micros} (microseconds since 1970-01-01T00:00:00Z). */
  public static UTF8String invoke(long micros) {
    return TimeText.format(micros);
  }
}
