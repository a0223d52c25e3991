package io.sluice.spark.variant;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.types.variant.VariantBuilder;
import org.apache.spark.unsafe.types.VariantVal;

/** VARIANT values for tests, built by Spark's own {@link VariantBuilder}. */
public final class Variants {
  private Variants() {}

  /** The VARIANT Spark's {@code parse_json} makes of {@code json}. */
  public static Variant json(String json) {
    try {
      return VariantBuilder.parseJson(json, false);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The same, as the value Spark passes to a function. */
  public static VariantVal val(String json) {
    Variant v = json(json);
    return new VariantVal(v.getValue(), v.getMetadata());
  }

  public static VariantVal val(Variant v) {
    return new VariantVal(v.getValue(), v.getMetadata());
  }

  /** One value appended by {@code append} (for the types JSON text never produces). */
  public static Variant built(java.util.function.Consumer<VariantBuilder> append) {
    VariantBuilder builder = new VariantBuilder(false);
    append.accept(builder);
    return builder.result();
  }

  public static byte[] utf8(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }
}
