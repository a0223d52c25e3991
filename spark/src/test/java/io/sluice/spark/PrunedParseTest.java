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

  /** {@code json_valid}; the same for the duplicate-key error of the parse it falls back to. */
  private static boolean valid(String text, boolean allowDuplicates, boolean validateUnicode) {
    try {
      return JsonValidFunction.invoke(
          text == null ? null : s(text), allowDuplicates, validateUnicode);
    } catch (NoClassDefFoundError e) {
      return false;
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
        // ASCII without escapes (JsonScan): the members a path starts at, whole
        "{\"a\":{\"b\":1,\"c\":2},\"d\":3} | [[\"a\",\"b\"]] | {\"a\":{\"b\":1,\"c\":2}}",
        "{\"a\":[{\"b\":1,\"c\":2},{\"c\":3},5]} | [[\"a\",\"b\"]] | {\"a\":[{\"b\":1,\"c\":2},{\"c\":3},5]}",
        " {\"a\" : 1 , \"b\":[2]}  trailing text is not read | [[\"a\"]] | {\"a\":1}",
        // other documents (Jackson): pruned below the top level too
        "{\"a\":{\"b\":1,\"c\":\"é\"},\"d\":3} | [[\"a\",\"b\"]] | {\"a\":{\"b\":1}}",
        "{\"a\":[{\"b\":1,\"c\":2},{\"c\":\"é\"},5]} | [[\"a\",\"b\"]] | {\"a\":[{\"b\":1},{},5]}",
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
    assertFalse(valid(document, false, true), document);
  }

  @Test
  void jsonValidIsWhetherParseGivesAValue() {
    for (String document : new String[] {"{\"a\":1}", "[1,{\"b\":\"é\\n\"}]", "3", "\"x\""}) {
      assertTrue(valid(document, false, true), document);
    }
    assertFalse(valid(null, false, true));
    String dup = "{\"a\":1,\"a\":2}";
    assertFalse(valid(dup, false, true));
    assertTrue(valid(dup, true, true));
    String lone = "{\"a\":\"\\ud800\"}";
    assertFalse(valid(lone, false, true));
    assertTrue(valid(lone, false, false));
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
    int scanned = 0;
    for (int i = 0; i < 20_000; i++) {
      boolean plain = i % 2 == 0; // half in what JsonScan decides (ASCII, no escapes)
      StringBuilder doc = new StringBuilder();
      value(random, doc, 0, plain);
      String text = random.nextInt(5) == 0 ? mangle(random, doc.toString(), plain) : doc.toString();
      byte[] bytes = utf8(text);
      if (PrunedParseFunction.plainAscii(bytes)
          && io.sluice.spark.variant.JsonScan.topMembers(bytes, true)
              != io.sluice.spark.variant.JsonScan.UNSURE) {
        scanned += 1;
      }
      boolean allowDuplicates = random.nextInt(4) == 0;
      boolean validateUnicode = random.nextInt(4) != 0;
      VariantVal whole = whole(text, allowDuplicates, validateUnicode);
      assertEquals(
          whole != null,
          valid(text, allowDuplicates, validateUnicode),
          () -> "json_valid: " + text);
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
        Variant full = new Variant(whole.getValue(), whole.getMetadata());
        String expected = prunedJson(full, tree);
        String found = prunedJson(new Variant(part.getValue(), part.getMetadata()), tree);
        assertEquals(expected, found, () -> text + " with " + paths);
        if (fastPath(text, validateUnicode)
            && !tree.keepsAll()
            && full.getType() == org.apache.spark.types.variant.VariantUtil.Type.OBJECT) {
          // pruned: no top-level member a path does not start at
          Variant kept = new Variant(part.getValue(), part.getMetadata());
          for (int m = 0; m < kept.objectSize(); m++) {
            String key = kept.getFieldAtIndex(m).key;
            assertNotNull(tree.child(key), () -> "kept " + key + ": " + text + " with " + paths);
          }
          pruned += 1;
        }
      }
      nulls += whole == null ? 1 : 0;
    }
    assertTrue(nulls > 1_000 && nulls < 10_000, "malformed documents: " + nulls);
    assertTrue(pruned > 10_000, "documents pruned: " + pruned);
    assertTrue(scanned > 5_000, "documents JsonScan decided: " + scanned);
  }

  private static boolean fastPath(String text, boolean validateUnicode) {
    return !(validateUnicode && PrunedParseFunction.mayHoldLoneSurrogates(utf8(text)));
  }

  /**
   * The reference: {@code v} pruned to {@code tree}, as JSON text (members in key order) whose
   * leaves carry their VARIANT type (a decimal and a double of the same value differ).
   */
  private static String prunedJson(Variant v, PathTree tree) {
    switch (v.getType()) {
      case OBJECT:
        List<String> members = new ArrayList<>();
        for (int i = 0; i < v.objectSize(); i++) {
          Variant.ObjectField field = v.getFieldAtIndex(i);
          PathTree child = tree.keepsAll() ? tree : tree.child(field.key);
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
        return v.getType() + ":" + v.toJson(ZoneOffset.UTC);
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

  private static final String[] PLAIN_KEYS = {"a", "b", "c", "note", "A", ""};
  private static final String[] PLAIN_STRINGS = {"", "x", "eu-west-1", "a b", "\t", "\u007f"};
  private static final String[] PLAIN_NUMBERS = {
    "0",
    "-0",
    "-1",
    "150.5",
    "1e3",
    "2E+2",
    "3e-1",
    "1.5e3",
    "123456789012345678901234567890",
    "01",
    "1.",
    "-",
    "1e",
    ".5",
    "+1",
    "0x1",
    "1.5.2"
  };
  private static final String[] PLAIN_LITERALS = {
    "true", "false", "null", "tru", "truex", "nul", "nullx", "true_", "false$", "True"
  };
  private static final String[] SPACE = {"", "", "", " ", "\n", "\t", "\r", " \n "};

  private static void value(Random random, StringBuilder out, int depth, boolean plain) {
    int kind = random.nextInt(depth >= 4 ? 4 : 7);
    if (plain && depth == 0) {
      kind = random.nextInt(10) == 0 ? random.nextInt(7) : 4; // mostly objects at the root
    }
    switch (kind) {
      case 0:
        String[] strings = plain ? PLAIN_STRINGS : STRINGS;
        out.append('"').append(strings[random.nextInt(strings.length)]).append('"');
        break;
      case 1:
        String[] numbers = plain ? PLAIN_NUMBERS : NUMBERS;
        out.append(numbers[random.nextInt(numbers.length)]);
        break;
      case 2:
        out.append(
            plain
                ? PLAIN_LITERALS[random.nextInt(PLAIN_LITERALS.length)]
                : random.nextBoolean() ? "true" : "false");
        break;
      case 3:
        out.append("null");
        break;
      case 4:
      case 5:
        out.append('{').append(space(random, plain));
        int members = random.nextInt(5);
        String[] keys = plain ? PLAIN_KEYS : KEYS;
        for (int i = 0; i < members; i++) {
          out.append(i == 0 ? "" : ",").append(space(random, plain));
          out.append('"').append(keys[random.nextInt(keys.length)]).append('"');
          out.append(space(random, plain)).append(':').append(space(random, plain));
          value(random, out, depth + 1, plain);
          out.append(space(random, plain));
        }
        out.append('}');
        if (plain && depth == 0 && random.nextInt(10) == 0) {
          out.append(random.nextBoolean() ? " x" : "}"); // after the root: never read
        }
        break;
      default:
        out.append('[').append(space(random, plain));
        int elements = random.nextInt(4);
        for (int i = 0; i < elements; i++) {
          out.append(i == 0 ? "" : ",").append(space(random, plain));
          value(random, out, depth + 1, plain);
          out.append(space(random, plain));
        }
        out.append(']');
    }
  }

  private static String space(Random random, boolean plain) {
    return plain ? SPACE[random.nextInt(SPACE.length)] : "";
  }

  private static final String[] DAMAGE = {
    "{", "}", "[", "]", ",", ":", "\"", "\\", "x", " ", "\ud7ff"
  };

  private static final String[] PLAIN_DAMAGE = {
    "{", "}", "[", "]", ",", ":", "\"", "x", " ", "\u0001", "\n", "0", "-", "e", "."
  };

  private static String mangle(Random random, String text, boolean plain) {
    if (text.isEmpty() || random.nextInt(4) == 0) {
      return text.substring(0, random.nextInt(text.length() + 1));
    }
    String[] damage = plain ? PLAIN_DAMAGE : DAMAGE;
    int at = random.nextInt(text.length());
    return text.substring(0, at) + damage[random.nextInt(damage.length)] + text.substring(at + 1);
  }

  private static byte[] utf8(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }
}
