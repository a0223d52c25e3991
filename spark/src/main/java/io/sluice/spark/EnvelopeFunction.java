package io.sluice.spark;

import io.sluice.spark.variant.JsonWriter;
import java.util.Arrays;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * {@code envelope(data VARIANT, zone STRING, datacontenttype, dataschema, id, source, specversion,
 * subject, time, type STRING) -> STRING}: the JSON object with those members in that (sorted)
 * order, NULL ones left out, the data written as {@code json} writes it: a CloudEvent without
 * extensions, in one buffer.
 */
public final class EnvelopeFunction extends SimpleFunction<UTF8String> {
  private static final long serialVersionUID = 1L;

  /** The members after data, in order: each key as a JSON string and a colon. */
  private static final String[] KEYS = {
    "datacontenttype", "dataschema", "id", "source", "specversion", "subject", "time", "type"
  };

  public EnvelopeFunction() {
    super("envelope", STRING, envelopeInputs());
  }

  private static DataType[] envelopeInputs() {
    DataType[] types = new DataType[2 + KEYS.length];
    types[0] = VARIANT;
    Arrays.fill(types, 1, types.length, STRING);
    return types;
  }

  public static UTF8String invoke(
      VariantVal data,
      UTF8String zone,
      UTF8String datacontenttype,
      UTF8String dataschema,
      UTF8String id,
      UTF8String source,
      UTF8String specversion,
      UTF8String subject,
      UTF8String time,
      UTF8String type) {
    UTF8String[] values = {
      datacontenttype, dataschema, id, source, specversion, subject, time, type
    };
    JsonWriter out = new JsonWriter((data == null ? 0 : data.getValue().length) + 256);
    boolean first = true;
    out.raw("{");
    if (data != null) {
      out.raw("\"data\":");
      if (!out.value(data.getValue(), data.getMetadata(), 0)) {
        // A value JSON has no literal for: the data as Spark writes it, then the rest.
        out = new JsonWriter(256);
        out.raw("{\"data\":");
        out.raw(JsonFunction.invoke(data, zone));
      }
      first = false;
    }
    for (int i = 0; i < KEYS.length; i++) {
      if (values[i] == null) {
        continue;
      }
      out.raw(first ? "\"" : ",\"");
      out.raw(KEYS[i]);
      out.raw("\":");
      byte[] bytes = values[i].getBytes();
      out.string(bytes, 0, bytes.length);
      first = false;
    }
    out.raw("}");
    return out.result();
  }
}
