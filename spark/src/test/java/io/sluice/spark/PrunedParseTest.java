package io.sluice.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sluice.spark.variant.PathTree;
import java.nio.charset.StandardCharsets;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.unsafe.types.VariantVal;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code parse_pruned} against {@code parse}: NULL for exactly the same documents, and the members
 * on its paths exactly as {@code parse} gives them (checked against a pruning of {@code parse}'s
 * own result, on hand-picked and on random, often malformed, documents).
 */
class PrunedParseTest {

  private static UTF8String s(String text) {
    return UTF8String.fromString(text);
  }

  /**
   * {@code parse}; its duplicate-key error (a SparkRuntimeException, which it returns as NULL in a
   * session) cannot be built without more of Spark than these tests load: NULL here too.
   */
  private static VariantVal whole(String text, boolean allowDuplicates, boolean validateUnicode) {
    try {
      return ParseFunction.invoke(s(text), allowDuplicates, validateUnicode);
    } catch (NoClassDefFoundError e) {
      return null;
    }
  }

  /**
   * {@code parse_pruned}; the same for the duplicate-key error of the whole parse it falls back to.
   */
  private static VariantVal pruned(
      String text, String paths, boolean allowDuplicates, boolean validateUnicode) {
    try {
      VariantVal byHandle =
          PrunedParseFunction.invoke(s(text), s(paths), allowDuplicates, validateUnicode, true);
      VariantVal byParts =
          PrunedParseFunction.invoke(s(text), s(paths), allowDuplicates, validateUnicode, false);
      assertEquals(String.valueOf(byHandle), String.valueOf(byParts), "without Spark's buildJson");
      return byHandle;
    } catch (NoClassDefFoundError e) {
      return null;
    }
  }

  private static VariantVal pruned(String text, String paths) {
    return PrunedParseFunction.invoke(s(text), s(paths), false, true);
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        // document | paths | the pruned document
        "{\"amount\":150.5,\"note\":\"xx\",\"region\":\"eu-1\"} | [[\"amount\"]] | {\"amount\":150.5}",
        "{\"a\":{\"b\":1,\"c\":2},\"d\":3} | [[\"a\",\"b\"]] | {\"a\":{\"b\":1}}",
        "{\"a\":[{\"b\":1,\"c\":2},{\"c\":3},5]} | [[\"a\",\"b\"]] | {\"a\":[{\"b\":1},{},5]}",
        "{\"a\":{\"b\":[1,{\"z\":2}]},\"d\":3} | [[\"a\"]] | {\"a\":{\"b\":[1,{\"z\":2}]}}",
        "{\"a\":1,\"b\":{\"x\":[1,2]}} | [[]] | {\"a\":1,\"b\":{\"x\":[1,2]}}",
        "{\"a\":1} | [] | {}",
        "{\"a\":\"v\"} | [[\"a\",\"b\"]] | {\"a\":\"v\"}",
        "[1,{\"a\":2,\"b\":3}] | [[\"a\"]] | [1,{\"a\":2}]",
        "\"text\" | [[\"a\"]] | \"text\"",
        "null | [[\"a\"]] | null",
        "{\"a\":1,\"b\":2} | [[\"a\"],[\"b\"],[\"a\",\"x\"]] | {\"a\":1,\"b\":2}",
      })
  void keepsTheMembersOnItsPaths(String document, String paths, String expected) {
    assertEquals(expected, pruned(document, paths).toString());
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "{\"a\":1,\"skip\":{\"x\":1,\"x\":2}}", // a duplicate in a dropped member
        "{\"a\":1,\"x\":2,\"x\":3}", // a duplicate beside the kept member
        "{\"a\":1,\"skip\":[1,2,}", // malformed inside a dropped member
        "{\"a\":1,\"skip\":\"\\ud800\"}", // a lone surrogate in a dropped string
        "{\"a\":1,\"\\udc00\":2}", // ... in a dropped name
        "{\"a\":1,\"skip\":\"\\q\"}", // a bad escape
        "{\"a\":1,\"skip\":01}", // a leading zero
        "{\"a\":1,\"skip\":tru}",
        "{\"a\":1",
        "''",
      })
  void isNullWhereParseIsNull(String document) {
    assertNull(whole(document, false, true), document);
    assertNull(pruned(document, "[[\"a\"]]"), document);
  }

  @Test
  void followsParsesSettings() {
    String dup = "{\"a\":1,\"a\":2,\"x\":{\"y\":1,\"y\":2}}";
    assertEquals(
        "{\"a\":2}", PrunedParseFunction.invoke(s(dup), s("[[\"a\"]]"), true, true).toString());
    String lone = "{\"a\":1,\"x\":\"\\ud800\"}";
    assertEquals(
        "{\"a\":1}", PrunedParseFunction.invoke(s(lone), s("[[\"a\"]]"), false, false).toString());
    assertNull(PrunedParseFunction.invoke(null, s("[[\"a\"]]"), false, true));
  }

  @Test
  void writesWholeValuesWithSparksBuilder() {
    // Found by reflection: a Spark version without it still gives the same values, slower.
    assertTrue(PrunedParseFunction.writesWithSparksBuilder());
  }

  @Test
  void refusesMalformedPaths() {
    assertThrows(IllegalArgumentException.class, () -> pruned("{}", "{\"a\":1}"));
    assertThrows(IllegalArgumentException.class, () -> pruned("{}", "[[1]]"));
    assertThrows(IllegalArgumentException.class, () -> pruned("{}", "[\"a\"]"));
    assertThrows(IllegalArgumentException.class, () -> pruned("{}", "[["));
  }

  @Test
  void surrogatesAreLookedForOnlyWhereTheyCanBe() {
    assertFalse(PrunedParseFunction.mayHoldLoneSurrogates(utf8("{\"a\":\"é😀\"}")));
    assertTrue(PrunedParseFunction.mayHoldLoneSurrogates(utf8("{\"a\":\"\\n\"}")));
    for (int length = 1; length < 24; length++) { // in a word and in the tail, everywhere
      for (int at = 0; at < length; at++) {
        for (byte b : new byte[] {'\\', (byte) 0xED}) {
          byte[] bytes = new byte[length];
          java.util.Arrays.fill(bytes, (byte) 'x');
          assertFalse(PrunedParseFunction.mayHoldLoneSurrogates(bytes));
          bytes[at] = b;
          assertTrue(PrunedParseFunction.mayHoldLoneSurrogates(bytes), length + " at " + at);
          bytes[at] = (byte) (b + 1); // a neighbour is not it
          assertFalse(PrunedParseFunction.mayHoldLoneSurrogates(bytes), length + " at " + at);
        }
      }
    }
  }

  @Test
  void largeDocumentsAreParsedWhole() {
    String big = "{\"a\":1,\"b\":\"" + "x".repeat(PrunedParseFunction.WHOLE_ABOVE_BYTES) + "\"}";
    assertEquals(
        ParseFunction.invoke(s(big), false, true).toString(), pruned(big, "[[\"a\"]]").toString());
  }

  /** Random documents, a fifth of them mangled: pruned and whole parses agree on each. */
  @Test
  void agreesWithParseOnRandomDocuments() {
    Random random = new Random(20261130);
    String[] pathSets = {
      "[[\"a\"]]",
      "[[\"a\",\"b\"]]",
      "[[\"b\"],[\"c\",\"a\"]]",
      "[[\"a\",\"a\",\"a\"]]",
      "[[]]",
      "[]"
    };
    int nulls = 0;
    int pruned = 0;
    for (int i = 0; i < 10_000; i++) {
      StringBuilder doc = new StringBuilder();
      value(random, doc, 0);
      String text = random.nextInt(5) == 0 ? mangle(random, doc.toString()) : doc.toString();
      boolean allowDuplicates = random.nextInt(4) == 0;
      boolean validateUnicode = random.nextInt(4) != 0;
      VariantVal whole = whole(text, allowDuplicates, validateUnicode);
      for (String paths : pathSets) {
        VariantVal part = pruned(text, paths, allowDuplicates, validateUnicode);
        if (whole == null) {
          assertNull(part, () -> text + " with " + paths);
          continue;
        }
        assertNotNull(part, () -> text + " with " + paths);
        // What a reader following the paths finds is the same; the rest may be kept (a document
        // parsed whole, on the slow path) or not.
        PathTree tree = PathTree.compile(paths);
        String expected = prunedJson(new Variant(whole.getValue(), whole.getMetadata()), tree);
        String found = prunedJson(new Variant(part.getValue(), part.getMetadata()), tree);
        assertEquals(expected, found, () -> text + " with " + paths);
        if (fastPath(text, validateUnicode)) {
          assertEquals(expected, part.toString(), () -> "pruned: " + text + " with " + paths);
          pruned += 1;
        }
      }
      nulls += whole == null ? 1 : 0;
    }
    assertTrue(nulls > 500 && nulls < 5_000, "malformed documents: " + nulls);
    assertTrue(pruned > 5_000, "documents pruned: " + pruned);
  }

  private static boolean fastPath(String text, boolean validateUnicode) {
    return !(validateUnicode && PrunedParseFunction.mayHoldLoneSurrogates(utf8(text)));
  }

  /** The reference: {@code v} pruned to {@code tree}, as JSON text (members in key order). */
  private static String prunedJson(Variant v, PathTree tree) {
    if (tree.keepsAll()) {
      return v.toJson(ZoneOffset.UTC);
    }
    switch (v.getType()) {
      case OBJECT:
        List<String> members = new ArrayList<>();
        for (int i = 0; i < v.objectSize(); i++) {
          Variant.ObjectField field = v.getFieldAtIndex(i);
          PathTree child = tree.child(field.key);
          if (child != null) {
            members.add(quoted(field.key) + ":" + prunedJson(field.value, child));
          }
        }
        return "{" + String.join(",", members) + "}";
      case ARRAY:
        List<String> elements = new ArrayList<>();
        for (int i = 0; i < v.arraySize(); i++) {
          elements.add(prunedJson(v.getElementAtIndex(i), tree));
        }
        return "[" + String.join(",", elements) + "]";
      default:
        return v.toJson(ZoneOffset.UTC);
    }
  }

  private static String quoted(String key) {
    Variant k = io.sluice.spark.variant.Variants.built(b -> b.appendString(key));
    return k.toJson(ZoneOffset.UTC);
  }

  private static final String[] KEYS = {"a", "b", "c", "note", "\\u0061", "é"};
  private static final String[] STRINGS = {
    "", "x", "eu-west-1", "é😀", "a\\nb", "\\\"q\\\"", "\\ud83d\\ude00", "\\ud800", "\\udc00x"
  };
  private static final String[] NUMBERS = {
    "0", "-1", "150.5", "1e3", "12345678901234567890123456789", "-0.0", "1E400", "3.14159"
  };

  private static void value(Random random, StringBuilder out, int depth) {
    int kind = random.nextInt(depth >= 4 ? 4 : 7);
    switch (kind) {
      case 0:
        out.append('"').append(STRINGS[random.nextInt(STRINGS.length)]).append('"');
        break;
      case 1:
        out.append(NUMBERS[random.nextInt(NUMBERS.length)]);
        break;
      case 2:
        out.append(random.nextBoolean() ? "true" : "false");
        break;
      case 3:
        out.append("null");
        break;
      case 4:
      case 5:
        out.append('{');
        int members = random.nextInt(5);
        for (int i = 0; i < members; i++) {
          out.append(i == 0 ? "" : ",").append('"').append(KEYS[random.nextInt(KEYS.length)]);
          out.append("\":");
          value(random, out, depth + 1);
        }
        out.append('}');
        break;
      default:
        out.append('[');
        int elements = random.nextInt(4);
        for (int i = 0; i < elements; i++) {
          out.append(i == 0 ? "" : ",");
          value(random, out, depth + 1);
        }
        out.append(']');
    }
  }

  private static final String[] DAMAGE = {
    "{", "}", "[", "]", ",", ":", "\"", "\\", "x", " ", "\ud7ff"
  };

  private static String mangle(Random random, String text) {
    if (text.isEmpty() || random.nextInt(4) == 0) {
      return text.substring(0, random.nextInt(text.length() + 1));
    }
    int at = random.nextInt(text.length());
    return text.substring(0, at) + DAMAGE[random.nextInt(DAMAGE.length)] + text.substring(at + 1);
  }

  private static byte[] utf8(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }
}
