package io.sluice.spark;

import static io.sluice.spark.variant.Variants.built;
import static io.sluice.spark.variant.Variants.json;
import static io.sluice.spark.variant.Variants.val;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.ZoneOffset;
import java.util.Arrays;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.unsafe.types.VariantVal;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The functions' static {@code invoke} methods, as generated code calls them. (Binding, the
 * duplicate-key error and an unknown name's error need more of Spark than these tests load:
 * tests/unit/pipelines covers them in a real session.)
 */
class FunctionsTest {

  private static UTF8String s(String text) {
    return text == null ? null : UTF8String.fromString(text);
  }

  @Test
  void catalogLoadsEveryListedFunction() throws Exception {
    VariantFunctions catalog = new VariantFunctions();
    Identifier[] functions = catalog.listFunctions(new String[] {"variant"});
    assertEquals(15, functions.length);
    for (Identifier id : functions) {
      UnboundFunction function = catalog.loadFunction(id);
      assertEquals(id.name(), function.name());
      assertTrue(function instanceof BoundFunction); // its own bound form
      assertEquals(id.name(), ((BoundFunction) function).name());
    }
    assertEquals("matches", catalog.loadFunction(Identifier.of(new String[0], "MATCHES")).name());
  }

  @Test
  void fieldSharesTheMetadata() {
    VariantVal doc = val("{\"a\":{\"b\":[1,\"x\"]},\"c\":null}");
    VariantVal a = FieldFunction.invoke(doc, s("a"));
    assertSame(doc.getMetadata(), a.getMetadata());
    assertEquals("{\"b\":[1,\"x\"]}", a.toString());
    assertEquals("null", FieldFunction.invoke(doc, s("c")).toString());
    assertNull(FieldFunction.invoke(doc, s("b")));
    assertNull(FieldFunction.invoke(a, s("x")));
    assertNull(FieldFunction.invoke(val("[1]"), s("a")));
    assertNull(FieldFunction.invoke(null, s("a")));
    assertNull(FieldFunction.invoke(doc, null));
  }

  @Test
  void textOfStringsOnly() {
    assertEquals("é", TextFunction.invoke(val("\"é\"")).toString());
    String longText = "y".repeat(100);
    assertEquals(longText, TextFunction.invoke(val("\"" + longText + "\"")).toString());
    assertNull(TextFunction.invoke(val("1")));
    assertNull(TextFunction.invoke(val("{\"a\":\"b\"}")));
    assertNull(TextFunction.invoke(null));
  }

  @ParameterizedTest
  @CsvSource({"1, 1.0", "-300, -300.0", "1.25, 1.25", "1e300, 1e300", "0.1, 0.1"})
  void numbers(String document, double expected) {
    assertEquals(expected, NumberFunction.invoke(val(document)));
  }

  @ParameterizedTest
  @ValueSource(strings = {"\"1\"", "true", "null", "[1]", "{}"})
  void notNumbers(String document) {
    assertTrue(Double.isNaN(NumberFunction.invoke(val(document))));
    assertTrue(Double.isNaN(NumberFunction.invoke(null)));
  }

  @ParameterizedTest
  @CsvSource({
    "{}, OBJECT",
    "[], ARRAY",
    "\"a\", STRING",
    "1, BIGINT",
    "1.5, DECIMAL",
    "1e5, DOUBLE",
    "true, BOOLEAN",
    "false, BOOLEAN",
    "null, VOID"
  })
  void kinds(String document, String kind) {
    assertEquals(kind, KindFunction.invoke(val(document)).toString());
  }

  @Test
  void kindsOfTypesJsonTextNeverHas() {
    assertEquals("STRING", KindFunction.invoke(val("\"" + "z".repeat(80) + "\"")).toString());
    assertEquals("FLOAT", KindFunction.invoke(val(built(b -> b.appendFloat(1f)))).toString());
    assertEquals("DATE", KindFunction.invoke(val(built(b -> b.appendDate(1)))).toString());
    assertNull(KindFunction.invoke(null));
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "{\"a\":1,\"b\":[true,null,\"x\"],\"c\":{\"d\":1.5}}",
        " [1, 2] ",
        "\"é😀\"",
        "12345678901234567890123456789",
        "1e400"
      })
  void parseGivesWhatSparksParserGives(String text) {
    Variant expected = json(text);
    VariantVal parsed = ParseFunction.invoke(s(text), false, false);
    assertArrayEquals(expected.getValue(), parsed.getValue());
    assertArrayEquals(expected.getMetadata(), parsed.getMetadata());
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "{", "[1,]", "\uFEFF{}", "nul"})
  void parseFailsAsNull(String text) {
    assertNull(ParseFunction.invoke(s(text), false, false));
  }

  @Test
  void parseHonoursItsSettings() {
    assertEquals("{\"a\":2}", ParseFunction.invoke(s("{\"a\":1,\"a\":2}"), true, false).toString());
    byte[] malformed = {'"', (byte) 0xFF, '"'};
    VariantVal replaced = ParseFunction.invoke(UTF8String.fromBytes(malformed), false, false);
    assertEquals("\"\uFFFD\"", replaced.toString()); // decoded as Spark decodes it
    assertNull(ParseFunction.invoke(null, false, false));
  }

  @Test
  void jsonWritesWhatToJsonWrites() {
    VariantVal doc = val("{\"z\":\"a\\nb\",\"a\":[1,2.5,1e300,null]}");
    assertEquals(
        "{\"a\":[1,2.5,1.0E300,null],\"z\":\"a\\nb\"}",
        JsonFunction.invoke(doc, s("UTC")).toString());
    Variant date = built(b -> b.appendDate(0));
    assertEquals(date.toJson(ZoneOffset.UTC), JsonFunction.invoke(val(date), null).toString());
    assertNull(JsonFunction.invoke(null, s("UTC")));
  }

  @Test
  void envelopeWritesTheMembersInOrderWithoutNulls() {
    UTF8String[] attributes = {
      s("application/json"),
      null,
      s("id-1"),
      s("/src"),
      s("1.0"),
      null,
      s("2024-06-01T00:00:00Z"),
      s("t\"ype")
    };
    UTF8String text = envelope(val("{\"b\":1,\"a\":\"x\"}"), attributes);
    assertEquals(
        "{\"data\":{\"a\":\"x\",\"b\":1},\"datacontenttype\":\"application/json\",\"id\":\"id-1\","
            + "\"source\":\"/src\",\"specversion\":\"1.0\",\"time\":\"2024-06-01T00:00:00Z\","
            + "\"type\":\"t\\\"ype\"}",
        text.toString());
    UTF8String[] none = new UTF8String[8];
    assertEquals("{}", envelope(null, none).toString());
    UTF8String[] onlyId = new UTF8String[8];
    onlyId[2] = s("x");
    assertEquals("{\"id\":\"x\"}", envelope(null, onlyId).toString());
    Variant date = built(b -> b.appendDate(0));
    assertEquals(
        "{\"data\":" + date.toJson(ZoneOffset.UTC) + ",\"id\":\"x\"}",
        envelope(val(date), onlyId).toString());
  }

  @Test
  void eventMergesExtensionsInNameOrder() {
    UTF8String[] attributes = new UTF8String[8];
    attributes[2] = s("id-1");
    attributes[7] = s("t");
    Variant date = built(b -> b.appendDate(0));
    ArrayBasedMapData extensions =
        new ArrayBasedMapData(
            new GenericArrayData(new Object[] {s("zz"), s("aa"), s("gone"), s("id"), s("day")}),
            new GenericArrayData(
                new Object[] {
                  val("\"r\\\"1\""), val("[1,{\"b\":null}]"), null, val("2"), val(date)
                }));
    UTF8String text =
        EventFunction.invoke(
            val("{\"k\":1}"),
            s("UTC"),
            extensions,
            attributes[0],
            attributes[1],
            attributes[2],
            attributes[3],
            attributes[4],
            attributes[5],
            attributes[6],
            attributes[7]);
    // Names sorted, NULL ones left out, an extension named like an attribute left out, a DATE
    // written as Spark writes it.
    assertEquals(
        "{\"aa\":[1,{\"b\":null}],\"data\":{\"k\":1},\"day\":"
            + date.toJson(ZoneOffset.UTC)
            + ",\"id\":\"id-1\",\"type\":\"t\",\"zz\":\"r\\\"1\"}",
        text.toString());
  }

  private static UTF8String envelope(VariantVal data, UTF8String[] a) {
    assertEquals(8, Arrays.asList(a).size());
    return EnvelopeFunction.invoke(data, s("UTC"), a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
  }

  @Test
  void matchesAMissingField() {
    UTF8String exists = s("[{\"path\":[],\"matchers\":[{\"exists\":true}]}]");
    assertTrue(MatchesFunction.invoke(val("0"), exists));
    assertEquals(false, MatchesFunction.invoke(null, exists));
  }
}
