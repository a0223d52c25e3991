package io.sluice.spark.variant;

import static io.sluice.spark.variant.Variants.built;
import static io.sluice.spark.variant.Variants.json;
import static io.sluice.spark.variant.Variants.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.types.variant.VariantUtil;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class VariantBytesTest {

  @Test
  void shortStringIsReadInPlace() {
    byte[] v = json("\"héllo\"").getValue();
    assertEquals(VariantUtil.SHORT_STR, VariantBytes.basicType(v, 0));
    assertEquals(-1, VariantBytes.primitiveType(v, 0));
    assertTrue(VariantBytes.isLeaf(v, 0));
    assertEquals(1, VariantBytes.textStart(v, 0));
    assertEquals(6, VariantBytes.textLength(v, 0)); // é is two bytes
    assertEquals("héllo", new String(v, 1, 6, java.nio.charset.StandardCharsets.UTF_8));
  }

  @Test
  void longStringHasAFourByteLength() {
    String text = "x".repeat(64) + "ü"; // past the 63 bytes of a short string
    byte[] v = json("\"" + text + "\"").getValue();
    assertEquals(VariantUtil.PRIMITIVE, VariantBytes.basicType(v, 0));
    assertEquals(VariantUtil.LONG_STR, VariantBytes.primitiveType(v, 0));
    assertEquals(1 + VariantUtil.U32_SIZE, VariantBytes.textStart(v, 0));
    assertEquals(66, VariantBytes.textLength(v, 0));
  }

  @ParameterizedTest
  @ValueSource(strings = {"1", "true", "null", "{\"a\":\"b\"}", "[\"a\"]", "1.5", "1e3"})
  void onlyStringsHaveText(String document) {
    assertEquals(-1, VariantBytes.textStart(json(document).getValue(), 0));
  }

  @ParameterizedTest
  @CsvSource({
    "0, INT1",
    "127, INT1",
    "-128, INT1",
    "128, INT2",
    "-32768, INT2",
    "32768, INT4",
    "-2147483648, INT4",
    "2147483648, INT8",
    "9223372036854775807, INT8",
    "-9223372036854775808, INT8"
  })
  void integersOfEachWidth(long number, String type) throws Exception {
    byte[] v = built(b -> b.appendLong(number)).getValue();
    assertEquals(VariantUtil.class.getField(type).getInt(null), VariantBytes.primitiveType(v, 0));
    assertEquals((double) number, VariantBytes.number(v, 0));
    assertEquals((double) number, VariantBytes.number(json(Long.toString(number)).getValue(), 0));
  }

  @Test
  void doublesAndFloats() {
    byte[] d = json("1e300").getValue();
    assertEquals(VariantUtil.DOUBLE, VariantBytes.primitiveType(d, 0));
    assertEquals(1e300, VariantBytes.number(d, 0));
    byte[] f = built(b -> b.appendFloat(0.1f)).getValue();
    assertEquals(VariantUtil.FLOAT, VariantBytes.primitiveType(f, 0));
    assertEquals((double) 0.1f, VariantBytes.number(f, 0));
    assertTrue(
        Double.isNaN(VariantBytes.number(built(b -> b.appendDouble(Double.NaN)).getValue(), 0)));
  }

  @ParameterizedTest
  @CsvSource({
    "1.5, DECIMAL4",
    "-0.001, DECIMAL4",
    "999999999.9, DECIMAL8",
    "12345678901.25, DECIMAL8",
    "9007199254740993.5, DECIMAL8", // unscaled value past 2^52: the exact BigDecimal path
    "0.1000000000000000055511151231257827, DECIMAL16",
    "1234567890123456789012.5, DECIMAL16",
    "0.00000000000000000000001, DECIMAL16", // scale 23
    "-12.3400, DECIMAL4"
  })
  void decimalsOfEachWidthAreCorrectlyRounded(String text, String type) throws Exception {
    byte[] v = json(text).getValue();
    assertEquals(VariantUtil.class.getField(type).getInt(null), VariantBytes.primitiveType(v, 0));
    assertEquals(new BigDecimal(text).doubleValue(), VariantBytes.number(v, 0));
  }

  @Test
  void decimalsAgreeWithBigDecimalOnRandomValues() {
    Random random = new Random(14);
    for (int i = 0; i < 5000; i++) {
      BigDecimal decimal =
          BigDecimal.valueOf(random.nextLong() >> random.nextInt(64), random.nextInt(19));
      byte[] v = built(b -> b.appendDecimal(decimal)).getValue();
      assertEquals(decimal.doubleValue(), VariantBytes.number(v, 0), decimal::toPlainString);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"\"5\"", "true", "false", "null", "{}", "[1]"})
  void nonNumbersAreNaN(String document) {
    assertTrue(Double.isNaN(VariantBytes.number(json(document).getValue(), 0)));
  }

  @Test
  void objectsAndArraysAreNotLeaves() {
    assertFalse(VariantBytes.isLeaf(json("{\"a\":1}").getValue(), 0));
    assertFalse(VariantBytes.isLeaf(json("[1]").getValue(), 0));
    assertEquals(VariantUtil.ARRAY, VariantBytes.basicType(json("[]").getValue(), 0));
    assertFalse(VariantBytes.isLeaf(null, -1)); // a missing value
  }

  @Test
  void membersOfNestedObjects() {
    Variant doc = json("{\"a\":1,\"b\":{\"c\":\"x\",\"d\":[true]},\"é\":2}");
    byte[] v = doc.getValue();
    byte[] m = doc.getMetadata();
    int b = VariantBytes.member(v, m, 0, utf8("b"));
    assertEquals(VariantUtil.OBJECT, VariantBytes.basicType(v, b));
    int c = VariantBytes.member(v, m, b, utf8("c"));
    assertEquals(1, VariantBytes.textLength(v, c));
    assertEquals('x', v[VariantBytes.textStart(v, c)]);
    assertEquals(
        VariantUtil.ARRAY, VariantBytes.basicType(v, VariantBytes.member(v, m, b, utf8("d"))));
    assertEquals(2.0, VariantBytes.number(v, VariantBytes.member(v, m, 0, utf8("é"))));
    assertEquals(-1, VariantBytes.member(v, m, 0, utf8("c"))); // only one level
    assertEquals(-1, VariantBytes.member(v, m, c, utf8("c"))); // not an object
    assertEquals(-1, VariantBytes.member(v, m, -1, utf8("a"))); // missing
    assertEquals(-1, VariantBytes.member(v, m, 0, utf8("B"))); // byte for byte
  }

  /** Keys around U+FFFF, where UTF-8 byte order and Java's string order differ. */
  private static final String[] AWKWARD_KEYS = {
    "k", "k\uE000", "k\uFFFF", "k\uD83D\uDE00", "k\u00E9", "k\u07FF", "k\u0800", "ka", "kb", ""
  };

  @Test
  void membersOfLargeObjectsAreFoundByBinarySearch() {
    List<String> keys = new ArrayList<>(List.of(AWKWARD_KEYS));
    for (int i = 0; i < 60; i++) {
      keys.add("field" + i);
    }
    StringBuilder text = new StringBuilder("{");
    for (int i = 0; i < keys.size(); i++) {
      text.append(i == 0 ? "" : ",").append('"').append(keys.get(i)).append("\":").append(i);
    }
    Variant doc = json(text.append('}').toString());
    assertTrue(doc.objectSize() > ObjectLayout.LINEAR_SEARCH_FIELDS);
    for (int i = 0; i < keys.size(); i++) {
      int at = VariantBytes.member(doc.getValue(), doc.getMetadata(), 0, utf8(keys.get(i)));
      assertEquals(i, VariantBytes.number(doc.getValue(), at), keys.get(i));
      int field =
          ObjectLayout.fieldPosition(
              doc.getValue(), doc.getMetadata(), UTF8String.fromString(keys.get(i)));
      assertEquals(at, field, keys.get(i));
    }
    assertEquals(-1, VariantBytes.member(doc.getValue(), doc.getMetadata(), 0, utf8("k\uFFFE")));
  }

  @Test
  void keysCompareAsJavaStrings() {
    Random random = new Random(7);
    String alphabet = "aZ\u00E9\u07FF\u0800\uD7FF\uE000\uFFFF";
    for (int i = 0; i < 20000; i++) {
      String a = randomText(random, alphabet);
      String b = randomText(random, alphabet);
      byte[] m = utf8(a);
      int order = VariantBytes.compareKeys(m, 0, m.length, utf8(b));
      assertEquals(Integer.signum(a.compareTo(b)), Integer.signum(order), a + " vs " + b);
    }
  }

  private static String randomText(Random random, String alphabet) {
    StringBuilder text = new StringBuilder();
    for (int n = random.nextInt(4); n > 0; n--) {
      if (random.nextInt(8) == 0) {
        text.appendCodePoint(0x10000 + random.nextInt(0x100000)); // a surrogate pair
      } else {
        text.append(alphabet.charAt(random.nextInt(alphabet.length())));
      }
    }
    return text.toString();
  }
}
