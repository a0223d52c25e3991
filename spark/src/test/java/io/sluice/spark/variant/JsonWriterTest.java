package io.sluice.spark.variant;

import static io.sluice.spark.variant.Variants.built;
import static io.sluice.spark.variant.Variants.json;
import static io.sluice.spark.variant.Variants.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.time.ZoneOffset;
import java.util.Random;
import org.apache.spark.types.variant.Variant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class JsonWriterTest {

  private static String write(Variant v) {
    JsonWriter out = new JsonWriter(1); // grows from its smallest buffer
    assertTrue(out.value(v.getValue(), v.getMetadata(), 0));
    return out.result().toString();
  }

  private static String string(String text) {
    JsonWriter out = new JsonWriter(1);
    byte[] bytes = utf8(text);
    out.string(bytes, 0, bytes.length);
    return out.result().toString();
  }

  @Test
  void escapesWhatJacksonEscapes() {
    assertEquals("\"a\\\"b\\\\c\"", string("a\"b\\c"));
    assertEquals("\"\\n\\r\\t\\b\\f\"", string("\n\r\t\b\f"));
    assertEquals("\"\\u0000\\u0001\\u001F\\u000B\"", string("\u0000\u0001\u001f\u000b"));
    assertEquals("\"/\u007f\"", string("/\u007f")); // neither the slash nor DEL
  }

  @Test
  void writesUnicodeAsIs() {
    assertEquals("\"é😀\uFFFF\u2028\"", string("é😀\uFFFF\u2028"));
  }

  @Test
  void writesPartOfABuffer() {
    JsonWriter out = new JsonWriter(16);
    out.raw("[");
    out.string(utf8("xxabcxx"), 2, 3);
    out.raw("]");
    assertEquals("[\"abc\"]", out.result().toString());
  }

  @Test
  void numbers() {
    assertEquals(
        "[0,-1,300,-2147483649,9223372036854775807]",
        write(json("[0,-1,300,-2147483649,9223372036854775807]")));
    assertEquals(
        "[1.5,-0.001,1.5,12345678901234567890.123]",
        // parse_json drops trailing zeros
        write(json("[1.5,-0.001,1.50,12345678901234567890.123]")));
    // as Spark writes it: VariantUtil.getDecimal drops trailing zeros
    assertEquals("1.5", write(built(b -> b.appendDecimal(new BigDecimal("1.50")))));
    assertEquals("[1.0E300,1.0E-7,-2.5E-300]", write(json("[1e300,1e-7,-2.5e-300]")));
    assertEquals("1.0E21", write(built(b -> b.appendDouble(1e21))));
    assertEquals("123.456", write(built(b -> b.appendDecimal(new BigDecimal("123.456")))));
  }

  @Test
  void nestedObjectsAndArrays() {
    assertEquals(
        "{\"a\":[1,{\"b\":null,\"c\":[]}],\"d\":{},\"e\":[true,false,\"x\"]}",
        write(json("{\"e\":[true,false,\"x\"],\"d\":{},\"a\":[1,{\"c\":[],\"b\":null}]}")));
  }

  @ParameterizedTest
  @ValueSource(strings = {"float", "nan", "infinity", "date", "binary", "nested"})
  void refusesWhatJsonHasNoLiteralFor(String kind) {
    Variant v =
        switch (kind) {
          case "float" -> built(b -> b.appendFloat(1.5f));
          case "nan" -> built(b -> b.appendDouble(Double.NaN));
          case "infinity" -> built(b -> b.appendDouble(Double.NEGATIVE_INFINITY));
          case "date" -> built(b -> b.appendDate(1));
          case "binary" -> built(b -> b.appendBinary(new byte[] {1}));
          default -> nestedDate();
        };
    assertFalse(new JsonWriter(16).value(v.getValue(), v.getMetadata(), 0));
  }

  private static Variant nestedDate() {
    return built(
        b -> {
          int start = b.getWritePos();
          java.util.ArrayList<Integer> offsets = new java.util.ArrayList<>();
          offsets.add(b.getWritePos() - start);
          b.appendLong(1);
          offsets.add(b.getWritePos() - start);
          b.appendDate(2);
          b.finishWritingArray(start, offsets);
        });
  }

  @Test
  void writesWhatSparksToJsonWrites() {
    Random random = new Random(2024);
    for (int i = 0; i < 1000; i++) {
      Variant v = json(randomJson(random, 3));
      assertEquals(v.toJson(ZoneOffset.UTC), write(v));
    }
  }

  private static String randomJson(Random random, int depth) {
    switch (random.nextInt(depth > 0 ? 9 : 6)) {
      case 0:
        return Long.toString(random.nextLong() >> random.nextInt(64));
      case 1:
        return Double.toString(random.nextGaussian() * Math.pow(10, random.nextInt(40) - 20));
      case 2:
        return BigDecimal.valueOf(random.nextInt(), random.nextInt(10)).toPlainString();
      case 3:
        return random.nextBoolean() ? "true" : "null";
      case 4:
      case 5:
        return quoted(random);
      case 6:
      case 7:
        StringBuilder object = new StringBuilder("{");
        for (int n = random.nextInt(5); n > 0; n--) {
          object.append(quoted(random)).append(':').append(randomJson(random, depth - 1));
          object.append(n > 1 ? "," : "");
        }
        return object.append('}').toString();
      default:
        StringBuilder array = new StringBuilder("[");
        for (int n = random.nextInt(5); n > 0; n--) {
          array.append(randomJson(random, depth - 1)).append(n > 1 ? "," : "");
        }
        return array.append(']').toString();
    }
  }

  private static String quoted(Random random) {
    String alphabet = "ab\"\\/\n\t\u0001\u001f\u007fé😀";
    StringBuilder text = new StringBuilder("\"");
    for (int n = random.nextInt(70); n > 0; n--) { // short and long strings
      int at = random.nextInt(alphabet.length() - 1);
      char c = alphabet.charAt(at);
      if (Character.isHighSurrogate(c)) {
        text.append(c).append(alphabet.charAt(at + 1));
      } else if (c == '"' || c == '\\') {
        text.append('\\').append(c);
      } else if (c < 0x20) {
        text.append(String.format("\\u%04x", (int) c));
      } else if (!Character.isLowSurrogate(c)) {
        text.append(c);
      }
    }
    return text.append('"').toString();
  }
}
