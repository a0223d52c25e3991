package io.sluice.spark;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.sluice.spark.variant.JsonInput;
import io.sluice.spark.variant.JsonScan;
import io.sluice.spark.variant.PathTree;
import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.ArrayList;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.types.variant.VariantBuilder;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * {@code parse_pruned(text STRING, paths STRING, allowDuplicateKeys BOOLEAN, validateUnicode
 * BOOLEAN) -> VARIANT}: {@link ParseFunction parse} of {@code text} with only the members on {@code
 * paths} kept, for a filter that reads those and nothing else: it is NULL exactly when {@code
 * parse} is, and every value a reader finds by following a prefix of one of the paths (in objects,
 * and through arrays, element by element) is the one {@code parse} gives, its whole value at a
 * path's end. What the rest of the document holds is read, checked and dropped; so a pattern's
 * {@code matches} decides the pruned value as it decides the whole one, and the whole value is
 * built only for the events it keeps.
 *
 * <p>{@code paths} is JSON text, an array of paths, each an array of member names, e.g. {@code
 * [["amount"],["customer","tier"]]}; compiled once per distinct literal ({@link PathTree}). A path
 * that is empty keeps the whole document.
 *
 * <p>Why "exactly when {@code parse} is NULL" holds: the same Jackson factory reads every token of
 * the document, so its syntax, nesting and number checks see all of it; duplicate member names are
 * refused everywhere by Jackson's strict detection when {@code parse} refuses them; and the checks
 * only a whole {@code parse} makes are never needed on the fast path: the lone surrogates its
 * Unicode check refuses can only come from an escape ({@code \}) or a 0xED byte, and its string and
 * size limits only from a document above {@link #WHOLE_ABOVE_BYTES}. A document with either, or
 * whose bytes are not read in place ({@link JsonInput#utf8Bytes}), is parsed whole: a correct
 * answer, only not a smaller one.
 */
public final class PrunedParseFunction extends SimpleFunction<VariantVal> {
  private static final long serialVersionUID = 1L;

  /**
   * Documents above this size are parsed whole: Jackson's string length limit (20,000,000
   * characters) and the VARIANT size limit (128 MiB) are checked only on values it decodes.
   */
  static final int WHOLE_ABOVE_BYTES = 1 << 20;

  public PrunedParseFunction() {
    super("parse_pruned", VARIANT, STRING, STRING, DataTypes.BooleanType, DataTypes.BooleanType);
  }

  public static VariantVal invoke(
      UTF8String text, UTF8String paths, boolean allowDuplicateKeys, boolean validateUnicode) {
    return invoke(text, paths, allowDuplicateKeys, validateUnicode, BUILD_JSON != null);
  }

  /**
   * {@link #invoke}, writing whole values with Spark's {@code buildJson} ({@code byHandle}) or by
   * parsing each alone (what a Spark version without that method gets).
   */
  static VariantVal invoke(
      UTF8String text,
      UTF8String paths,
      boolean allowDuplicateKeys,
      boolean validateUnicode,
      boolean byHandle) {
    if (text == null) {
      return null;
    }
    PathTree tree = PathTree.compiled(paths);
    byte[] bytes = JsonInput.utf8Bytes(text);
    if (tree.keepsAll() || bytes == null || bytes.length > WHOLE_ABOVE_BYTES) {
      return ParseFunction.invoke(text, allowDuplicateKeys, validateUnicode);
    }
    if (plainAscii(bytes)) {
      int[] members = JsonScan.topMembers(bytes, !allowDuplicateKeys);
      if (members == JsonScan.INVALID) {
        return null;
      }
      if (members != JsonScan.UNSURE) {
        VariantVal leaves = leaves(bytes, members, tree, allowDuplicateKeys);
        return leaves != null
            ? leaves
            : ParseFunction.invoke(kept(bytes, members, tree), allowDuplicateKeys, false);
      }
    }
    if (validateUnicode && mayHoldLoneSurrogates(bytes)) {
      return ParseFunction.invoke(text, allowDuplicateKeys, validateUnicode);
    }
    try (JsonParser parser = JsonInput.FACTORY.createParser(bytes, 0, bytes.length)) {
      if (!allowDuplicateKeys) {
        parser.enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);
      }
      parser.nextToken();
      VariantBuilder builder = new VariantBuilder(allowDuplicateKeys, validateUnicode);
      new Pruning(parser, builder, allowDuplicateKeys, validateUnicode, byHandle).prune(tree);
      Variant v = builder.result();
      return new VariantVal(v.getValue(), v.getMetadata());
    } catch (IOException | RuntimeException e) {
      return null; // as parse: any failure (syntax, duplicate, size limit) is NULL
    }
  }

  /**
   * The object of the top-level {@code members} ({@link JsonScan#topMembers}) that a path starts
   * at, their text as it is (each value whole: a reader following a path below it finds what the
   * whole document holds there), as JSON text to parse.
   */
  private static UTF8String kept(byte[] bytes, int[] members, PathTree tree) {
    byte[] out = new byte[bytes.length + 2];
    int length = 0;
    out[length++] = '{';
    for (int i = 0; i < members.length; i += 2) {
      if (tree.startsAt(bytes, members[i])) {
        if (length > 1) {
          out[length++] = ',';
        }
        int size = members[i + 1] - members[i];
        System.arraycopy(bytes, members[i], out, length, size);
        length += size;
      }
    }
    out[length++] = '}';
    return UTF8String.fromBytes(out, 0, length);
  }

  /**
   * The object of the top-level {@code members} a path starts at, written straight from their text
   * when each value is a leaf (a string, number or literal), as {@code parse} writes it; null when
   * one is an object or an array ({@link #kept} then).
   */
  private static VariantVal leaves(
      byte[] bytes, int[] members, PathTree tree, boolean allowDuplicateKeys) {
    VariantBuilder builder = null;
    ArrayList<VariantBuilder.FieldEntry> fields = null;
    for (int i = 0; i < members.length; i += 2) {
      int start = members[i];
      if (!tree.startsAt(bytes, start)) {
        continue;
      }
      int nameEnd = start + 1;
      while (bytes[nameEnd] != '"') {
        nameEnd++;
      }
      int value = nameEnd + 1;
      while (bytes[value] != ':') {
        value++;
      }
      value++;
      while (bytes[value] == ' '
          || bytes[value] == '\n'
          || bytes[value] == '\r'
          || bytes[value] == '\t') {
        value++;
      }
      if (bytes[value] == '{' || bytes[value] == '[') {
        return null;
      }
      if (builder == null) {
        builder = new VariantBuilder(allowDuplicateKeys, false);
        fields = new ArrayList<>();
      }
      String name = ascii(bytes, start + 1, nameEnd);
      fields.add(new VariantBuilder.FieldEntry(name, builder.addKey(name), builder.getWritePos()));
      leaf(builder, bytes, value, members[i + 1]);
    }
    if (builder == null) {
      builder = new VariantBuilder(allowDuplicateKeys, false);
      fields = new ArrayList<>();
    }
    builder.finishWritingObject(0, fields);
    Variant v = builder.result();
    return new VariantVal(v.getValue(), v.getMetadata());
  }

  /** Appends the JSON leaf {@code bytes[start, end)} (valid, ASCII) as {@code parse} does. */
  static void leaf(VariantBuilder builder, byte[] bytes, int start, int end) {
    switch (bytes[start]) {
      case '"':
        builder.appendString(ascii(bytes, start + 1, end - 1)); // no escapes
        return;
      case 't':
        builder.appendBoolean(true);
        return;
      case 'f':
        builder.appendBoolean(false);
        return;
      case 'n':
        builder.appendNull();
        return;
      default:
        number(builder, ascii(bytes, start, end));
    }
  }

  /**
   * A number as {@code parse} writes it: an integer that fits a long as a long; else, without an
   * exponent, a decimal of at most 38 digits and scale 38; else a double ({@code VariantBuilder}'s
   * {@code buildJson} and {@code tryParseDecimal}).
   */
  static void number(VariantBuilder builder, String text) {
    boolean integer = true;
    boolean exponent = false;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '.') {
        integer = false;
      } else if (c == 'e' || c == 'E') {
        integer = false;
        exponent = true;
      }
    }
    if (integer) {
      try {
        builder.appendLong(Long.parseLong(text));
        return;
      } catch (NumberFormatException e) {
        // beyond a long: as a decimal or a double, as below
      }
    }
    if (!exponent) {
      java.math.BigDecimal decimal = new java.math.BigDecimal(text);
      if (decimal.scale() <= 38 && decimal.precision() <= 38) {
        builder.appendDecimal(decimal);
        return;
      }
    }
    builder.appendDouble(Double.parseDouble(text));
  }

  private static String ascii(byte[] bytes, int from, int to) {
    return new String(bytes, from, to - from, java.nio.charset.StandardCharsets.ISO_8859_1);
  }

  /** Whether every byte is ASCII and none is a backslash: what {@link JsonScan} covers. */
  static boolean plainAscii(byte[] bytes) {
    int i = 0;
    for (; i + Long.BYTES <= bytes.length; i += Long.BYTES) {
      long word = (long) LONGS.get(bytes, i);
      if ((word & HIGHS) != 0 || hasByte(word, '\\')) {
        return false;
      }
    }
    for (; i < bytes.length; i++) {
      if (bytes[i] < 0 || bytes[i] == '\\') {
        return false;
      }
    }
    return true;
  }

  /**
   * Whether the text may decode to a lone surrogate: only an escape (backslash) or a three-byte
   * sequence starting 0xED (U+D000 to U+DFFF, surrogates among them) can produce one. Valid
   * four-byte sequences decode to surrogate pairs, which pass.
   */
  static boolean mayHoldLoneSurrogates(byte[] bytes) {
    int i = 0;
    for (; i + Long.BYTES <= bytes.length; i += Long.BYTES) { // eight bytes at a time
      long word = (long) LONGS.get(bytes, i);
      if (hasByte(word, '\\') || hasByte(word, 0xED)) {
        return true;
      }
    }
    for (; i < bytes.length; i++) {
      if (bytes[i] == '\\' || bytes[i] == (byte) 0xED) {
        return true;
      }
    }
    return false;
  }

  private static final VarHandle LONGS =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final long ONES = 0x0101010101010101L;
  private static final long HIGHS = 0x8080808080808080L;

  /** Whether a byte of {@code word} is {@code b} (a zero byte of their XOR; exact). */
  private static boolean hasByte(long word, int b) {
    long x = word ^ (ONES * (b & 0xFF));
    return ((x - ONES) & ~x & HIGHS) != 0;
  }

  /**
   * {@code VariantBuilder.buildJson(JsonParser)}: what {@code parse} writes for the value at the
   * parser's token, into a builder of ours (private in Spark; null when a Spark version lacks it:
   * each value is then parsed alone and appended, the same value at a higher cost).
   */
  private static final MethodHandle BUILD_JSON = buildJsonHandle();

  /** Whether whole values are written by Spark's own {@code buildJson} (the fast way). */
  static boolean writesWithSparksBuilder() {
    return BUILD_JSON != null;
  }

  private static MethodHandle buildJsonHandle() {
    try {
      return MethodHandles.privateLookupIn(VariantBuilder.class, MethodHandles.lookup())
          .findVirtual(
              VariantBuilder.class,
              "buildJson",
              MethodType.methodType(void.class, JsonParser.class));
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  /** One document's walk: its parser, the builder it writes to and parse's settings. */
  private static final class Pruning {
    private final JsonParser parser;
    private final VariantBuilder builder;
    private final boolean allowDuplicateKeys;
    private final boolean validateUnicode;
    private final boolean byHandle;

    Pruning(
        JsonParser parser,
        VariantBuilder builder,
        boolean allowDuplicateKeys,
        boolean validateUnicode,
        boolean byHandle) {
      this.parser = parser;
      this.builder = builder;
      this.allowDuplicateKeys = allowDuplicateKeys;
      this.validateUnicode = validateUnicode;
      this.byHandle = byHandle;
    }

    /** Writes the value at the parser's token, pruned to {@code tree}; reads all of it. */
    void prune(PathTree tree) throws IOException {
      JsonToken token = parser.currentToken();
      if (tree.keepsAll() || (token != JsonToken.START_OBJECT && token != JsonToken.START_ARRAY)) {
        // The whole value, as parse writes it (a leaf at a path's inner step is kept too: a
        // reader finds no member below it, as in the whole document).
        whole();
        return;
      }
      int start = builder.getWritePos();
      if (token == JsonToken.START_ARRAY) {
        ArrayList<Integer> offsets = new ArrayList<>();
        while (parser.nextToken() != JsonToken.END_ARRAY) {
          offsets.add(builder.getWritePos() - start);
          prune(tree); // each element
        }
        builder.finishWritingArray(start, offsets);
        return;
      }
      ArrayList<VariantBuilder.FieldEntry> fields = new ArrayList<>();
      while (parser.nextToken() != JsonToken.END_OBJECT) {
        String name = parser.currentName();
        JsonToken value = parser.nextToken();
        PathTree child = tree.child(name);
        if (child == null) {
          if (value == JsonToken.START_OBJECT || value == JsonToken.START_ARRAY) {
            parser.skipChildren(); // every token read (and checked) all the same
          }
          continue;
        }
        int id = builder.addKey(name);
        fields.add(new VariantBuilder.FieldEntry(name, id, builder.getWritePos() - start));
        prune(child);
      }
      builder.finishWritingObject(start, fields);
    }

    /** Appends the value at the parser's token as {@code parse} writes it (reads all of it). */
    private void whole() throws IOException {
      if (!byHandle) {
        builder.appendVariant(
            VariantBuilder.parseJson(parser, allowDuplicateKeys, validateUnicode));
        return;
      }
      try {
        BUILD_JSON.invokeExact(builder, parser); // a constant: the JIT inlines its target
      } catch (IOException | RuntimeException | Error e) {
        throw e;
      } catch (Throwable e) {
        throw new IllegalStateException(e);
      }
    }
  }
}
