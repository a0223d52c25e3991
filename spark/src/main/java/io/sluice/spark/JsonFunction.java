package io.sluice.spark;

import io.sluice.spark.variant.JsonWriter;
import java.time.ZoneId;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * {@code json(v VARIANT, zone STRING) -> STRING}: what {@code to_json(v)} gives (the session time
 * zone {@code zone} only matters for timestamps, which JSON input never holds), written as UTF-8
 * bytes directly ({@link JsonWriter}).
 */
public final class JsonFunction extends SimpleFunction<UTF8String> {
  private static final long serialVersionUID = 1L;

  public JsonFunction() {
    super("json", STRING, VARIANT, STRING);
  }

  public static UTF8String invoke(VariantVal v, UTF8String zone) {
    if (v == null) {
      return null;
    }
    JsonWriter out = new JsonWriter(v.getValue().length + 16);
    if (!out.value(v.getValue(), v.getMetadata(), 0)) {
      // A DATE, TIMESTAMP, FLOAT, BINARY or UUID somewhere (no JSON document has one):
      // Spark's own writer, which needs the session time zone.
      ZoneId zoneId = ZoneId.of(zone == null ? "UTC" : zone.toString());
      return UTF8String.fromString(v.toJson(zoneId));
    }
    return out.result();
  }
}
