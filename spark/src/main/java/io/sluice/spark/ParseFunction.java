package io.sluice.spark;

import com.fasterxml.jackson.core.JsonParser;
import io.sluice.spark.variant.JsonInput;
import java.io.IOException;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.types.variant.VariantBuilder;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * {@code parse(text STRING, allowDuplicateKeys BOOLEAN, validateUnicode BOOLEAN) -> VARIANT}: what
 * {@code try_parse_json(text)} gives under those two settings ({@code
 * spark.sql.variant.allowDuplicateKeys}, {@code spark.sql.variant.validateUnicodeInJsonParsing}),
 * with one shared {@code JsonFactory} ({@link JsonInput#FACTORY}).
 */
public final class ParseFunction extends SimpleFunction<VariantVal> {
  private static final long serialVersionUID = 1L;

  public ParseFunction() {
    super("parse", VARIANT, STRING, DataTypes.BooleanType, DataTypes.BooleanType);
  }

  public static VariantVal invoke(
      UTF8String text, boolean allowDuplicateKeys, boolean validateUnicode) {
    if (text == null) {
      return null;
    }
    // The same steps as VariantBuilder.parseJson(String, ...), which try_parse_json calls,
    // but reading the UTF-8 bytes in place when that reads the same text (see utf8Bytes).
    byte[] bytes = JsonInput.utf8Bytes(text);
    try (JsonParser parser =
        bytes != null
            ? JsonInput.FACTORY.createParser(bytes, 0, bytes.length)
            : JsonInput.FACTORY.createParser(text.toString())) {
      parser.nextToken();
      Variant v = VariantBuilder.parseJson(parser, allowDuplicateKeys, validateUnicode);
      return new VariantVal(v.getValue(), v.getMetadata());
    } catch (IOException | RuntimeException e) {
      return null; // try_parse_json: any failure (syntax, size limit) is NULL
    }
  }
}
