package io.sluice.spark;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.util.JsonRecyclerPools;
import java.io.IOException;
import java.time.ZoneId;
import java.util.Arrays;
import java.util.Locale;
import org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException;
import org.apache.spark.sql.connector.catalog.FunctionCatalog;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.VariantType$;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.types.variant.VariantBuilder;
import org.apache.spark.types.variant.VariantUtil;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * Parses, reads and writes VARIANT values faster than Spark's built-in functions do.
 *
 * <p>Spark's {@code variant_get(v, path, type)} builds and evaluates a {@code Cast} expression for
 * every value it reads, and {@code variant_get(v, path, 'variant')} rebuilds the value's metadata:
 * reading three fields of a 500-byte event costs about as much as parsing it. These functions read
 * the VARIANT binary encoding directly (a value's header byte, an object's field ids against the
 * metadata's key bytes), from generated code: each is a Spark {@link ScalarFunction} with a static
 * "magic" {@code invoke} method, which Spark calls through {@code StaticInvoke} inside whole-stage
 * code generation.
 *
 * <p>This class is a {@link FunctionCatalog}: with {@code
 * spark.sql.catalog.sluice_fn=io.sluice.spark.VariantFunctions} the functions are called as {@code
 * sluice_fn.variant.<name>(...)} (any namespace resolves to the same functions):
 *
 * <ul>
 *   <li>{@code field(v VARIANT, key STRING) -> VARIANT}: the member {@code key} of an object,
 *       sharing the object's metadata; NULL when {@code v} is NULL, is not an object, or has no
 *       such member. Keys are compared byte for byte (UTF-8), as {@code variant_get} does.
 *   <li>{@code text(v VARIANT) -> STRING}: the text of a string value; NULL for any other.
 *   <li>{@code number(v VARIANT) -> DOUBLE}: a number as a DOUBLE, exactly as {@code
 *       try_variant_get(v, '$', 'double')} gives it; NaN for anything else (strings, booleans,
 *       null, objects, arrays, SQL NULL). JSON has no NaN, so NaN means "not a number".
 *   <li>{@code parse(text STRING, allowDuplicateKeys BOOLEAN, validateUnicode BOOLEAN) -> VARIANT}:
 *       what {@code try_parse_json(text)} gives under those two settings ({@code
 *       spark.sql.variant.allowDuplicateKeys}, {@code
 *       spark.sql.variant.validateUnicodeInJsonParsing}), with one shared {@code JsonFactory}.
 *   <li>{@code json(v VARIANT, zone STRING) -> STRING}: what {@code to_json(v)} gives (the session
 *       time zone {@code zone} only matters for timestamps, which JSON input never holds), written
 *       as UTF-8 bytes directly.
 *   <li>{@code kind(v VARIANT) -> STRING}: the name of a value's type as {@code schema_of_variant}
 *       starts it ({@code OBJECT}, {@code ARRAY}, {@code STRING}, {@code BIGINT}, {@code DOUBLE},
 *       {@code DECIMAL}, {@code BOOLEAN}, {@code VOID}, ...) without the members' types or a
 *       decimal's precision; NULL for NULL.
 *   <li>{@code envelope(data VARIANT, zone STRING, datacontenttype, dataschema, id, source,
 *       specversion, subject, time, type STRING) -> STRING}: the JSON object with those members in
 *       that (sorted) order, NULL ones left out, the data written as {@code json} writes it: a
 *       CloudEvent without extensions, in one buffer.
 *   <li>{@code matches(node VARIANT, steps STRING) -> BOOLEAN}: whether the steps of an
 *       event-pattern rule that start at one top-level field hold below that field's value ({@code
 *       node}; NULL: the field is missing), with aws/event-ruler's array-consistent semantics;
 *       never NULL. {@code steps} is JSON written by {@code pipelines.patterns} (format and
 *       semantics: {@link EventPatterns}), compiled once per distinct literal.
 *   <li>{@code time(ts TIMESTAMP) -> STRING}: a timestamp as RFC 3339 text in UTC, a CloudEvent's
 *       {@code time} ({@link TimeText}); its argument must not be NULL.
 * </ul>
 */
public final class VariantFunctions implements FunctionCatalog {
  private String name = "sluice_fn";

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    this.name = name;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public Identifier[] listFunctions(String[] namespace) {
    return new Identifier[] {
      Identifier.of(namespace, "field"),
      Identifier.of(namespace, "text"),
      Identifier.of(namespace, "number"),
      Identifier.of(namespace, "parse"),
      Identifier.of(namespace, "json"),
      Identifier.of(namespace, "kind"),
      Identifier.of(namespace, "envelope"),
      Identifier.of(namespace, "matches"),
      Identifier.of(namespace, "time")
    };
  }

  @Override
  public UnboundFunction loadFunction(Identifier ident) throws NoSuchFunctionException {
    switch (ident.name().toLowerCase(Locale.ROOT)) {
      case "field":
        return new Field();
      case "text":
        return new Text();
      case "number":
        return new Number();
      case "parse":
        return new Parse();
      case "json":
        return new Json();
      case "kind":
        return new Kind();
      case "envelope":
        return new Envelope();
      case "matches":
        return new Matches();
      case "time":
        return new TimeText();
      default:
        throw new NoSuchFunctionException(ident);
    }
  }

  /** A function that is its own bound form: its name and types are fixed. */
  private abstract static class Function<R> implements UnboundFunction, ScalarFunction<R> {
    private static final long serialVersionUID = 1L;
    private static final DataType VARIANT = VariantType$.MODULE$;
    private static final DataType STRING = DataTypes.StringType;

    private final String name;
    private final DataType resultType;
    private final DataType[] inputTypes;

    Function(String name, DataType resultType, DataType... inputTypes) {
      this.name = name;
      this.resultType = resultType;
      this.inputTypes = inputTypes;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public DataType resultType() {
      return resultType;
    }

    @Override
    public DataType[] inputTypes() {
      return inputTypes.clone();
    }

    @Override
    public BoundFunction bind(StructType inputType) {
      if (inputType.fields().length != inputTypes.length) {
        throw new UnsupportedOperationException(
            String.format(
                "%s takes %d argument(s), got %d",
                name, inputTypes.length, inputType.fields().length));
      }
      return this;
    }

    @Override
    public String description() {
      return name;
    }
  }

  /** {@code field(v VARIANT, key STRING) -> VARIANT}. */
  public static final class Field extends Function<VariantVal> {
    private static final long serialVersionUID = 1L;

    public Field() {
      super("field", Function.VARIANT, Function.VARIANT, Function.STRING);
    }

    public static VariantVal invoke(VariantVal v, UTF8String key) {
      if (v == null || key == null) {
        return null;
      }
      byte[] value = v.getValue();
      byte[] metadata = v.getMetadata();
      int at = fieldPosition(value, metadata, key);
      if (at < 0) {
        return null;
      }
      int size = VariantUtil.valueSize(value, at);
      return new VariantVal(Arrays.copyOfRange(value, at, at + size), metadata);
    }
  }

  /** {@code text(v VARIANT) -> STRING}. */
  public static final class Text extends Function<UTF8String> {
    private static final long serialVersionUID = 1L;

    public Text() {
      super("text", Function.STRING, Function.VARIANT);
    }

    public static UTF8String invoke(VariantVal v) {
      if (v == null) {
        return null;
      }
      byte[] value = v.getValue();
      int header = value[0] & 0xFF;
      int basicType = header & VariantUtil.BASIC_TYPE_MASK;
      if (basicType == VariantUtil.SHORT_STR) {
        // The string's bytes, in place (UTF8String does not copy).
        return UTF8String.fromBytes(value, 1, header >> VariantUtil.BASIC_TYPE_BITS);
      }
      if (basicType == VariantUtil.PRIMITIVE
          && (header >> VariantUtil.BASIC_TYPE_BITS) == VariantUtil.LONG_STR) {
        int length = VariantUtil.readUnsigned(value, 1, VariantUtil.U32_SIZE);
        return UTF8String.fromBytes(value, 1 + VariantUtil.U32_SIZE, length);
      }
      return null;
    }
  }

  /** {@code number(v VARIANT) -> DOUBLE}. */
  public static final class Number extends Function<Double> {
    private static final long serialVersionUID = 1L;

    public Number() {
      super("number", DataTypes.DoubleType, Function.VARIANT);
    }

    @Override
    public boolean isResultNullable() {
      return false;
    }

    public static double invoke(VariantVal v) {
      if (v == null) {
        return Double.NaN;
      }
      byte[] value = v.getValue();
      int header = value[0] & 0xFF;
      if ((header & VariantUtil.BASIC_TYPE_MASK) != VariantUtil.PRIMITIVE) {
        return Double.NaN;
      }
      switch (header >> VariantUtil.BASIC_TYPE_BITS) {
        case VariantUtil.INT1:
        case VariantUtil.INT2:
        case VariantUtil.INT4:
        case VariantUtil.INT8:
          return (double) VariantUtil.getLong(value, 0);
        case VariantUtil.DOUBLE:
          return VariantUtil.getDouble(value, 0);
        case VariantUtil.FLOAT:
          return (double) VariantUtil.getFloat(value, 0);
        case VariantUtil.DECIMAL4:
        case VariantUtil.DECIMAL8:
        case VariantUtil.DECIMAL16:
          // What Spark's cast of a DECIMAL to DOUBLE computes (correctly rounded).
          return VariantUtil.getDecimal(value, 0).doubleValue();
        default:
          return Double.NaN;
      }
    }
  }

  /** {@code parse(text STRING, allowDuplicateKeys BOOLEAN, validateUnicode BOOLEAN) -> VARIANT}. */
  public static final class Parse extends Function<VariantVal> {
    private static final long serialVersionUID = 1L;

    /**
     * Thread-safe once configured; Spark's parse_json uses a default one per document. Its buffers
     * come from a shared deque rather than a thread-local (an executor thread's crowded
     * ThreadLocalMap made each lookup a slow miss).
     */
    private static final JsonFactory FACTORY =
        JsonFactory.builder().recyclerPool(JsonRecyclerPools.newConcurrentDequePool()).build();

    public Parse() {
      super(
          "parse", Function.VARIANT, Function.STRING, DataTypes.BooleanType, DataTypes.BooleanType);
    }

    public static VariantVal invoke(
        UTF8String text, boolean allowDuplicateKeys, boolean validateUnicode) {
      if (text == null) {
        return null;
      }
      // The same steps as VariantBuilder.parseJson(String, ...), which try_parse_json calls,
      // but reading the UTF-8 bytes in place when that reads the same text (see utf8Bytes).
      byte[] bytes = utf8Bytes(text);
      try (JsonParser parser =
          bytes != null
              ? FACTORY.createParser(bytes, 0, bytes.length)
              : FACTORY.createParser(text.toString())) {
        parser.nextToken();
        Variant v = VariantBuilder.parseJson(parser, allowDuplicateKeys, validateUnicode);
        return new VariantVal(v.getValue(), v.getMetadata());
      } catch (IOException | RuntimeException e) {
        return null; // try_parse_json: any failure (syntax, size limit) is NULL
      }
    }
  }

  /**
   * The bytes of {@code text} when Jackson's byte parser reads exactly the characters Spark's
   * parse_json reads (it decodes the text to a String): valid UTF-8 (a String replaces malformed
   * bytes), no byte-order mark (the byte parser skips it, the String parser refuses it) and no NUL
   * in the first four bytes (the byte parser would take UTF-16 or UTF-32). Else null: the text is
   * decoded as Spark does.
   */
  static byte[] utf8Bytes(UTF8String text) {
    int n = text.numBytes();
    byte[] bytes = text.getBytes(); // the backing array itself when it holds just the text
    if (!validUtf8(bytes, n)) {
      return null;
    }
    if (n >= 3
        && (bytes[0] & 0xFF) == 0xEF
        && (bytes[1] & 0xFF) == 0xBB
        && (bytes[2] & 0xFF) == 0xBF) {
      return null;
    }
    for (int i = 0; i < Math.min(n, 4); i++) {
      if (bytes[i] == 0) {
        return null;
      }
    }
    return bytes;
  }

  /**
   * Whether {@code bytes[0, n)} is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates,
   * nothing above U+10FFFF), which is exactly what Java's decoder reads without replacing anything.
   * ASCII runs are skipped 8 bytes at a time: UTF8String.isValid decodes every character and costs
   * as much as the parse.
   */
  static boolean validUtf8(byte[] bytes, int n) {
    int i = 0;
    while (i < n) {
      if (i + 8 <= n && (((long) LONGS.get(bytes, i)) & 0x8080808080808080L) == 0) {
        i += 8;
        continue;
      }
      int b = bytes[i] & 0xFF;
      if (b < 0x80) {
        i++;
        continue;
      }
      int more;
      int low = 0x80;
      int high = 0xBF;
      if (b >= 0xC2 && b <= 0xDF) {
        more = 1;
      } else if (b >= 0xE0 && b <= 0xEF) {
        more = 2;
        if (b == 0xE0) {
          low = 0xA0; // no overlong three-byte forms
        } else if (b == 0xED) {
          high = 0x9F; // no UTF-16 surrogates
        }
      } else if (b >= 0xF0 && b <= 0xF4) {
        more = 3;
        if (b == 0xF0) {
          low = 0x90; // no overlong four-byte forms
        } else if (b == 0xF4) {
          high = 0x8F; // nothing above U+10FFFF
        }
      } else {
        return false;
      }
      if (i + more >= n) {
        return false; // cut short
      }
      int second = bytes[i + 1] & 0xFF;
      if (second < low || second > high) {
        return false;
      }
      for (int k = 2; k <= more; k++) {
        if ((bytes[i + k] & 0xC0) != 0x80) {
          return false;
        }
      }
      i += more + 1;
    }
    return true;
  }

  private static final java.lang.invoke.VarHandle LONGS =
      java.lang.invoke.MethodHandles.byteArrayViewVarHandle(
          long[].class, java.nio.ByteOrder.LITTLE_ENDIAN);

  /** {@code json(v VARIANT, zone STRING) -> STRING}. */
  public static final class Json extends Function<UTF8String> {
    private static final long serialVersionUID = 1L;

    public Json() {
      super("json", Function.STRING, Function.VARIANT, Function.STRING);
    }

    public static UTF8String invoke(VariantVal v, UTF8String zone) {
      if (v == null) {
        return null;
      }
      JsonWriter out = new JsonWriter(v.getValue().length + 16);
      if (!out.value(v.getValue(), v.getMetadata(), 0)) {
        // A DATE, TIMESTAMP, FLOAT, BINARY or UUID somewhere (no JSON document has one):
        // Spark's own writer, which needs the session time zone.
        ZoneId zoneId = ZoneId.of(zone == null ? "UTC" : zone.toString());
        return UTF8String.fromString(v.toJson(zoneId));
      }
      return out.result();
    }
  }

  /** {@code kind(v VARIANT) -> STRING}. */
  public static final class Kind extends Function<UTF8String> {
    private static final long serialVersionUID = 1L;
    private static final UTF8String OBJECT = UTF8String.fromString("OBJECT");
    private static final UTF8String ARRAY = UTF8String.fromString("ARRAY");
    private static final UTF8String STRING = UTF8String.fromString("STRING");

    public Kind() {
      super("kind", Function.STRING, Function.VARIANT);
    }

    public static UTF8String invoke(VariantVal v) {
      if (v == null) {
        return null;
      }
      byte[] value = v.getValue();
      int header = value[0] & 0xFF;
      switch (header & VariantUtil.BASIC_TYPE_MASK) {
        case VariantUtil.OBJECT:
          return OBJECT;
        case VariantUtil.ARRAY:
          return ARRAY;
        case VariantUtil.SHORT_STR:
          return STRING;
        default:
          return PRIMITIVE_KINDS[header >> VariantUtil.BASIC_TYPE_BITS];
      }
    }

    /** schema_of_variant's names of the primitive types, by type id (null: unknown). */
    private static final UTF8String[] PRIMITIVE_KINDS = new UTF8String[64];

    static {
      String[][] names = {
        {"NULL", "VOID"},
        {"TRUE", "BOOLEAN"},
        {"FALSE", "BOOLEAN"},
        {"INT1", "BIGINT"},
        {"INT2", "BIGINT"},
        {"INT4", "BIGINT"},
        {"INT8", "BIGINT"},
        {"DOUBLE", "DOUBLE"},
        {"DECIMAL4", "DECIMAL"},
        {"DECIMAL8", "DECIMAL"},
        {"DECIMAL16", "DECIMAL"},
        {"DATE", "DATE"},
        {"TIMESTAMP", "TIMESTAMP"},
        {"TIMESTAMP_NTZ", "TIMESTAMP_NTZ"},
        {"FLOAT", "FLOAT"},
        {"BINARY", "BINARY"},
        {"LONG_STR", "STRING"},
        {"UUID", "UUID"},
      };
      int[] ids = {
        VariantUtil.NULL, VariantUtil.TRUE, VariantUtil.FALSE, VariantUtil.INT1,
        VariantUtil.INT2, VariantUtil.INT4, VariantUtil.INT8, VariantUtil.DOUBLE,
        VariantUtil.DECIMAL4, VariantUtil.DECIMAL8, VariantUtil.DECIMAL16, VariantUtil.DATE,
        VariantUtil.TIMESTAMP, VariantUtil.TIMESTAMP_NTZ, VariantUtil.FLOAT, VariantUtil.BINARY,
        VariantUtil.LONG_STR, VariantUtil.UUID,
      };
      for (int i = 0; i < ids.length; i++) {
        PRIMITIVE_KINDS[ids[i]] = UTF8String.fromString(names[i][1]);
      }
    }
  }

  /** {@code matches(node VARIANT, steps STRING) -> BOOLEAN}, never NULL. */
  public static final class Matches extends Function<Boolean> {
    private static final long serialVersionUID = 1L;

    public Matches() {
      super("matches", DataTypes.BooleanType, Function.VARIANT, Function.STRING);
    }

    @Override
    public boolean isResultNullable() {
      return false;
    }

    /** Spark passes a NULL argument as a Java null (no null propagation): a missing field. */
    public static boolean invoke(VariantVal node, UTF8String steps) {
      return EventPatterns.matches(node, steps);
    }
  }

  /** {@code envelope(data VARIANT, zone STRING, 8 attribute STRINGs) -> STRING}. */
  public static final class Envelope extends Function<UTF8String> {
    private static final long serialVersionUID = 1L;

    /** The members after data, in order: each key as a JSON string and a colon. */
    private static final String[] KEYS = {
      "datacontenttype", "dataschema", "id", "source", "specversion", "subject", "time", "type"
    };

    public Envelope() {
      super("envelope", Function.STRING, envelopeInputs());
    }

    private static DataType[] envelopeInputs() {
      DataType[] types = new DataType[2 + KEYS.length];
      types[0] = Function.VARIANT;
      Arrays.fill(types, 1, types.length, Function.STRING);
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
          out.raw(Json.invoke(data, zone));
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

  /**
   * Writes JSON text as UTF-8 bytes: VARIANT values as {@code Variant.toJson} writes them, and
   * strings escaped as Jackson's default generator escapes them: the quote, the backslash and
   * control characters (the short escapes for newline, return, tab, backspace and form feed, else a
   * six-character unicode escape with upper-case hex digits); nothing else, non-ASCII text
   * included.
   */
  static final class JsonWriter {
    private static final byte[] HEX =
        "0123456789ABCDEF".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    private byte[] buffer;
    private int size;

    JsonWriter(int capacity) {
      buffer = new byte[Math.max(capacity, 16)];
    }

    UTF8String result() {
      return UTF8String.fromBytes(buffer, 0, size);
    }

    private void room(int more) {
      if (size + more > buffer.length) {
        buffer = Arrays.copyOf(buffer, Math.max(buffer.length * 2, size + more));
      }
    }

    private void put(byte b) {
      room(1);
      buffer[size++] = b;
    }

    void raw(String ascii) {
      put(ascii);
    }

    void raw(UTF8String text) {
      byte[] bytes = text.getBytes();
      room(bytes.length);
      System.arraycopy(bytes, 0, buffer, size, bytes.length);
      size += bytes.length;
    }

    private void put(String ascii) {
      int n = ascii.length();
      room(n);
      for (int i = 0; i < n; i++) {
        buffer[size++] = (byte) ascii.charAt(i);
      }
    }

    /** A JSON string literal of the UTF-8 bytes {@code from[offset, offset + length)}. */
    void string(byte[] from, int offset, int length) {
      room(length + 2);
      buffer[size++] = '"';
      int end = offset + length;
      for (int i = offset; i < end; i++) {
        byte b = from[i];
        if ((b < 0 || b >= 0x20) && b != '"' && b != '\\') { // text, non-ASCII bytes included
          if (size == buffer.length) {
            room(1);
          }
          buffer[size++] = b;
        } else {
          escape(b);
        }
      }
      put((byte) '"');
    }

    private void escape(byte b) {
      switch (b) {
        case '"':
          put("\\\"");
          break;
        case '\\':
          put("\\\\");
          break;
        case '\n':
          put("\\n");
          break;
        case '\r':
          put("\\r");
          break;
        case '\t':
          put("\\t");
          break;
        case '\b':
          put("\\b");
          break;
        case '\f':
          put("\\f");
          break;
        default:
          room(6);
          buffer[size++] = '\\';
          buffer[size++] = 'u';
          buffer[size++] = '0';
          buffer[size++] = '0';
          buffer[size++] = HEX[(b >> 4) & 0xF];
          buffer[size++] = HEX[b & 0xF];
      }
    }

    /**
     * The JSON text of the VARIANT value at {@code pos}; false (and nothing reliable written) when
     * it holds a type JSON has no literal for.
     */
    boolean value(byte[] value, byte[] metadata, int pos) {
      int header = value[pos] & 0xFF;
      int basicType = header & VariantUtil.BASIC_TYPE_MASK;
      int typeInfo = header >> VariantUtil.BASIC_TYPE_BITS;
      switch (basicType) {
        case VariantUtil.SHORT_STR:
          string(value, pos + 1, typeInfo);
          return true;
        case VariantUtil.OBJECT:
          return object(value, metadata, pos);
        case VariantUtil.ARRAY:
          return array(value, metadata, pos, typeInfo);
        default:
          return primitive(value, pos, typeInfo);
      }
    }

    private boolean primitive(byte[] value, int pos, int typeInfo) {
      switch (typeInfo) {
        case VariantUtil.NULL:
          put("null");
          return true;
        case VariantUtil.TRUE:
          put("true");
          return true;
        case VariantUtil.FALSE:
          put("false");
          return true;
        case VariantUtil.INT1:
        case VariantUtil.INT2:
        case VariantUtil.INT4:
        case VariantUtil.INT8:
          put(Long.toString(VariantUtil.getLong(value, pos)));
          return true;
        case VariantUtil.DOUBLE:
          double d = VariantUtil.getDouble(value, pos);
          if (!Double.isFinite(d)) {
            return false;
          }
          put(Double.toString(d));
          return true;
        case VariantUtil.DECIMAL4:
        case VariantUtil.DECIMAL8:
        case VariantUtil.DECIMAL16:
          put(VariantUtil.getDecimal(value, pos).toPlainString());
          return true;
        case VariantUtil.LONG_STR:
          int length = VariantUtil.readUnsigned(value, pos + 1, VariantUtil.U32_SIZE);
          string(value, pos + 1 + VariantUtil.U32_SIZE, length);
          return true;
        default:
          return false;
      }
    }

    private boolean object(byte[] value, byte[] metadata, int pos) {
      ObjectLayout object = new ObjectLayout(value, metadata, pos);
      put((byte) '{');
      for (int i = 0; i < object.size; i++) {
        if (i > 0) {
          put((byte) ',');
        }
        int id = object.id(i);
        int from = object.keyStart(id);
        string(metadata, from, object.keyStart(id + 1) - from);
        put((byte) ':');
        if (!value(value, metadata, object.valueAt(i))) {
          return false;
        }
      }
      put((byte) '}');
      return true;
    }

    private boolean array(byte[] value, byte[] metadata, int pos, int typeInfo) {
      boolean large = ((typeInfo >> 2) & 0x1) != 0;
      int offsetSize = (typeInfo & 0x3) + 1;
      int sizeBytes = large ? VariantUtil.U32_SIZE : 1;
      int elements = VariantUtil.readUnsigned(value, pos + 1, sizeBytes);
      int offsetStart = pos + 1 + sizeBytes;
      int dataStart = offsetStart + (elements + 1) * offsetSize;
      put((byte) '[');
      for (int i = 0; i < elements; i++) {
        if (i > 0) {
          put((byte) ',');
        }
        int at =
            dataStart + VariantUtil.readUnsigned(value, offsetStart + offsetSize * i, offsetSize);
        if (!value(value, metadata, at)) {
          return false;
        }
      }
      put((byte) ']');
      return true;
    }
  }

  /**
   * Where the member {@code key} of the object at the start of {@code value} begins, or -1 when the
   * value is not an object or has no such member. Objects of up to {@value #LINEAR_SEARCH_FIELDS}
   * fields are searched by comparing key bytes against the metadata dictionary (no string is
   * decoded); larger ones by a binary search over their sorted keys, as {@link
   * Variant#getFieldByKey} does.
   */
  static int fieldPosition(byte[] value, byte[] metadata, UTF8String key) {
    if ((value[0] & VariantUtil.BASIC_TYPE_MASK) != VariantUtil.OBJECT) {
      return -1;
    }
    ObjectLayout object = new ObjectLayout(value, metadata, 0);
    if (object.size > LINEAR_SEARCH_FIELDS) {
      // Field ids are sorted by their keys (Java string order): a binary search, as
      // Variant.getFieldByKey does, decoding one key per probe.
      String wanted = key.toString();
      int low = 0;
      int high = object.size - 1;
      while (low <= high) {
        int mid = (low + high) >>> 1;
        int order = VariantUtil.getMetadataKey(metadata, object.id(mid)).compareTo(wanted);
        if (order == 0) {
          return object.valueAt(mid);
        }
        if (order < 0) {
          low = mid + 1;
        } else {
          high = mid - 1;
        }
      }
      return -1;
    }
    byte[] keyBytes = key.getBytes();
    for (int i = 0; i < object.size; i++) {
      int id = object.id(i);
      int from = object.keyStart(id);
      int to = object.keyStart(id + 1);
      if (to - from == keyBytes.length
          && Arrays.equals(metadata, from, to, keyBytes, 0, keyBytes.length)) {
        return object.valueAt(i);
      }
    }
    return -1;
  }

  /**
   * Where the parts of the VARIANT object at {@code pos} lie (its header decoded once): its fields'
   * ids, their values, and their keys' bytes in the metadata dictionary.
   */
  static final class ObjectLayout {
    final int size;
    private final byte[] value;
    private final byte[] metadata;
    private final int idSize;
    private final int offsetSize;
    private final int idStart;
    private final int offsetStart;
    private final int dataStart;
    private final int metaOffsetSize;
    private final int stringStart;

    ObjectLayout(byte[] value, byte[] metadata, int pos) {
      int typeInfo = (value[pos] & 0xFF) >> VariantUtil.BASIC_TYPE_BITS;
      boolean large = ((typeInfo >> 4) & 0x1) != 0;
      int sizeBytes = large ? VariantUtil.U32_SIZE : 1;
      this.value = value;
      this.metadata = metadata;
      idSize = ((typeInfo >> 2) & 0x3) + 1;
      offsetSize = (typeInfo & 0x3) + 1;
      size = VariantUtil.readUnsigned(value, pos + 1, sizeBytes);
      idStart = pos + 1 + sizeBytes;
      offsetStart = idStart + size * idSize;
      dataStart = offsetStart + (size + 1) * offsetSize;
      metaOffsetSize = ((metadata[0] >> 6) & 0x3) + 1;
      int dictionarySize = VariantUtil.readUnsigned(metadata, 1, metaOffsetSize);
      stringStart = 1 + (dictionarySize + 2) * metaOffsetSize;
    }

    /** The dictionary id of field {@code i}'s key. */
    int id(int i) {
      return VariantUtil.readUnsigned(value, idStart + idSize * i, idSize);
    }

    /** Where the key of dictionary id {@code id} starts in the metadata (id + 1: ends). */
    int keyStart(int id) {
      return stringStart
          + VariantUtil.readUnsigned(metadata, 1 + (id + 1) * metaOffsetSize, metaOffsetSize);
    }

    /** Where field {@code i}'s value starts in the value bytes. */
    int valueAt(int i) {
      return dataStart + VariantUtil.readUnsigned(value, offsetStart + offsetSize * i, offsetSize);
    }
  }

  static final int LINEAR_SEARCH_FIELDS = 32;
}
