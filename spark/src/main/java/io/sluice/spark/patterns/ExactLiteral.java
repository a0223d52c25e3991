package io.sluice.spark.patterns;

import static io.sluice.spark.variant.VariantBytes.primitiveType;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.types.variant.VariantUtil;

/** {@code {"literal": true|false|null}}: that JSON literal. */
final class ExactLiteral extends Matcher {
  private final int type;

  ExactLiteral(JsonNode literal) {
    if (literal.isNull()) {
      type = VariantUtil.NULL;
    } else if (literal.isBoolean()) {
      type = literal.booleanValue() ? VariantUtil.TRUE : VariantUtil.FALSE;
    } else {
      throw new IllegalArgumentException("matches: a literal is true, false or null: " + literal);
    }
  }

  @Override
  boolean test(byte[] v, int pos) {
    return primitiveType(v, pos) == type;
  }
}
