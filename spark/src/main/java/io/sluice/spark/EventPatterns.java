package io.sluice.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.apache.spark.sql.catalyst.util.CollationAwareUTF8String;
import org.apache.spark.types.variant.VariantUtil;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * The steps of an event-pattern rule decided on one VARIANT field value: the native twin of {@code
 * _node_steps} in {@code pipelines/spec/patterns/evaluator.py} (aws/event-ruler's array-consistent
 * matching), behind {@code sluice_fn.variant.matches(node, steps)}.
 *
 * <p>{@code node} is the value of a field (a Java null: the field is missing; a VARIANT null is
 * JSON null). {@code steps} is the JSON text {@code pipelines.patterns} writes: an array of steps
 * in the rule's order, their paths relative to the node,
 *
 * <pre>
 * [{"path": ["amount"], "matchers": [{"numeric": [100.0, false, null, false]}]},
 *  {"path": ["coupon"], "absent": true}]
 * </pre>
 *
 * each matcher a one-member object: {@code {"string": s}}, {@code {"number": d}}, {@code
 * {"literal": true|false|null}}, {@code {"ip": [lowKey, highKey]}} (keys as {@code ip.ip_key}
 * writes them, {@code "4:0A000000"}), {@code {"prefix": s}}, {@code {"suffix": s}}, {@code
 * {"prefix-ignore-case": s}}, {@code {"suffix-ignore-case": s}}, {@code {"equals-ignore-case": s}},
 * {@code {"wildcard": [segments]}}, {@code {"numeric": [lower, lowerInclusive, upper,
 * upperInclusive]}} (null: unbounded), {@code {"anything-but": [matchers]}}, {@code {"exists":
 * true}}.
 *
 * <p>How a node is decided: its elements are the node itself, or when it is an array its elements,
 * arrays among them replaced by their own elements down to {@value #MAX_ARRAY_NESTING} levels. The
 * absence steps before the first value step must hold in every element; the remaining steps must
 * all hold inside one element, where steps with a longer path are grouped by their next key and
 * decided the same way on that member.
 *
 * <p>Leaf values are read as the Spark SQL filter of {@code pipelines.patterns} reads them: strings
 * byte for byte (UTF-8), numbers as the DOUBLE {@code try_variant_get(v, '$', 'double')} gives
 * (finite ones only), JSON types never converted into each other, text lower-cased by the function
 * Spark's {@code lower()} calls for the default collation, IP addresses as {@code
 * pipelines/spec/patterns/ip.py} parses them.
 *
 * <p>{@code steps} is a constant (Spark passes the same literal object on every row of a task): it
 * is compiled once per distinct text, and found again by the literal object's identity without
 * reading the text ({@link #compiled}). Evaluation reads the VARIANT bytes in place and allocates
 * nothing, except to lower-case non-ASCII text and to convert a decimal a double division cannot.
 */
final class EventPatterns {
  /** How deep arrays directly inside arrays are searched (model.MAX_ARRAY_NESTING). */
  static final int MAX_ARRAY_NESTING = 3;

  private EventPatterns() {}

  /** Whether {@code steps} hold below {@code node} (null: a missing field); never null. */
  static boolean matches(VariantVal node, UTF8String steps) {
    Node program = compiled(steps);
    if (node == null) {
      return program.test(null, null, -1);
    }
    return program.test(node.getValue(), node.getMetadata(), 0);
  }

  // -- the compiled steps, once per distinct text --------------------------------------------

  private static final int RECENT_SLOTS = 1024;
  private static final int RECENT_WAYS = 4;
  private static final int MAX_COMPILED = 4096;
  private static final AtomicReferenceArray<Recent> RECENT =
      new AtomicReferenceArray<>(RECENT_SLOTS);
  private static final AtomicInteger EVICTIONS = new AtomicInteger();
  private static final Map<String, Node> COMPILED = new ConcurrentHashMap<>();
  private static final ObjectMapper JSON = new ObjectMapper();

  /** A literal object and its compiled steps (immutable: safely shared between threads). */
  private static final class Recent {
    final UTF8String literal;
    final Node program;

    Recent(UTF8String literal, Node program) {
      this.literal = literal;
      this.program = program;
    }
  }

  /**
   * The compiled form of {@code steps}. Each literal object is looked up by identity in {@link
   * #RECENT_WAYS} slots from its identity hash (a task's literals and those of the tasks running
   * beside it rarely collide; a missing one evicts the slots in turn, so two never keep evicting
   * each other), else compiled or found by content and remembered there.
   */
  static Node compiled(UTF8String steps) {
    if (steps == null) {
      throw new IllegalArgumentException("matches: the steps are NULL");
    }
    int start = System.identityHashCode(steps);
    for (int way = 0; way < RECENT_WAYS; way++) {
      Recent recent = RECENT.get((start + way) & (RECENT_SLOTS - 1));
      if (recent != null && recent.literal == steps) {
        return recent.program;
      }
    }
    String text = steps.toString();
    Node program = COMPILED.get(text);
    if (program == null) {
      program = compile(text);
      if (COMPILED.size() >= MAX_COMPILED) {
        COMPILED.clear(); // patterns are few; only a runaway caller gets here
      }
      COMPILED.put(text, program);
    }
    int slot = -1;
    for (int way = 0; way < RECENT_WAYS && slot < 0; way++) {
      if (RECENT.get((start + way) & (RECENT_SLOTS - 1)) == null) {
        slot = (start + way) & (RECENT_SLOTS - 1);
      }
    }
    if (slot < 0) {
      slot = (start + (EVICTIONS.getAndIncrement() & (RECENT_WAYS - 1))) & (RECENT_SLOTS - 1);
    }
    RECENT.set(slot, new Recent(steps, program));
    return program;
  }

  static Node compile(String text) {
    JsonNode root;
    try {
      root = JSON.readTree(text);
    } catch (IOException e) {
      throw new IllegalArgumentException("matches: the steps are not JSON: " + e.getMessage(), e);
    }
    if (root == null || !root.isArray()) {
      throw new IllegalArgumentException("matches: the steps must be a JSON array");
    }
    List<PathStep> steps = new ArrayList<>();
    for (JsonNode step : root) {
      JsonNode path = step.path("path");
      if (!path.isArray()) {
        throw new IllegalArgumentException("matches: a step needs a path array: " + step);
      }
      byte[][] keys = new byte[path.size()][];
      for (int i = 0; i < keys.length; i++) {
        keys[i] = utf8(requireText(path.get(i), "a path key"));
      }
      boolean absent = step.path("absent").asBoolean(false);
      AnyOf matchers = absent ? null : anyOf(step.path("matchers"));
      steps.add(new PathStep(keys, 0, absent, matchers));
    }
    return node(steps);
  }

  /** A step with its path as seen from where it is decided: {@code keys[from:]}. */
  private static final class PathStep {
    final byte[][] keys;
    final int from;
    final boolean absent;
    final AnyOf matchers;

    PathStep(byte[][] keys, int from, boolean absent, AnyOf matchers) {
      this.keys = keys;
      this.from = from;
      this.absent = absent;
      this.matchers = matchers;
    }

    boolean atLeaf() {
      return from == keys.length;
    }

    PathStep below() {
      return new PathStep(keys, from + 1, absent, matchers);
    }

    byte[][] rest() {
      return Arrays.copyOfRange(keys, from, keys.length);
    }
  }

  private static Node node(List<PathStep> steps) {
    int firstValue = 0;
    while (firstValue < steps.size() && steps.get(firstValue).absent) {
      firstValue++;
    }
    byte[][][] absent = new byte[firstValue][][];
    for (int i = 0; i < firstValue; i++) {
      absent[i] = steps.get(i).rest();
    }
    List<PathStep> pinned = steps.subList(firstValue, steps.size());
    return new Node(absent, pinned.isEmpty() ? null : element(pinned));
  }

  private static Element element(List<PathStep> steps) {
    List<PathStep> leaf = new ArrayList<>();
    Map<String, List<PathStep>> groups = new LinkedHashMap<>();
    for (PathStep step : steps) {
      if (step.atLeaf()) {
        leaf.add(step);
      } else {
        String key = new String(step.keys[step.from], StandardCharsets.UTF_8);
        groups.computeIfAbsent(key, k -> new ArrayList<>()).add(step.below());
      }
    }
    boolean[] absent = new boolean[leaf.size()];
    AnyOf[] matchers = new AnyOf[leaf.size()];
    for (int i = 0; i < absent.length; i++) {
      absent[i] = leaf.get(i).absent;
      matchers[i] = leaf.get(i).matchers;
    }
    byte[][] keys = new byte[groups.size()][];
    Node[] children = new Node[groups.size()];
    int i = 0;
    for (Map.Entry<String, List<PathStep>> group : groups.entrySet()) {
      keys[i] = utf8(group.getKey());
      children[i] = node(group.getValue());
      i++;
    }
    return new Element(absent, matchers, keys, children);
  }

  // -- evaluation ------------------------------------------------------------------------------

  /** Steps below one field value ({@code _node_steps}). */
  static final class Node {
    /** Paths of the absence steps before the first value step: no element has a leaf there. */
    private final byte[][][] absent;

    /** The other steps, which must hold inside one element; null when there are none. */
    private final Element pinned;

    Node(byte[][][] absent, Element pinned) {
      this.absent = absent;
      this.pinned = pinned;
    }

    /** Whether the steps hold below the value at {@code pos} ({@code -1}: missing). */
    boolean test(byte[] v, byte[] m, int pos) {
      for (byte[][] path : absent) {
        if (hasLeaf(v, m, pos, path, 0)) {
          return false;
        }
      }
      return pinned == null || pinned.inSomeElement(v, m, pos);
    }
  }

  /** Steps that hold inside one element ({@code _element_steps}). */
  static final class Element {
    /** Steps on the element itself: absence, or a leaf one of the matchers accepts. */
    private final boolean[] absent;

    private final AnyOf[] matchers;

    /** Steps on members, grouped by key. */
    private final byte[][] keys;

    private final Node[] children;

    Element(boolean[] absent, AnyOf[] matchers, byte[][] keys, Node[] children) {
      this.absent = absent;
      this.matchers = matchers;
      this.keys = keys;
      this.children = children;
    }

    boolean inSomeElement(byte[] v, byte[] m, int pos) {
      if (pos >= 0 && basicType(v, pos) == VariantUtil.ARRAY) {
        return inSomeCrushed(v, m, pos, MAX_ARRAY_NESTING - 1);
      }
      return holdsIn(v, m, pos);
    }

    private boolean inSomeCrushed(byte[] v, byte[] m, int array, int depth) {
      int typeInfo = (v[array] & 0xFF) >> VariantUtil.BASIC_TYPE_BITS;
      int sizeBytes = ((typeInfo >> 2) & 0x1) != 0 ? VariantUtil.U32_SIZE : 1;
      int offsetSize = (typeInfo & 0x3) + 1;
      int count = VariantUtil.readUnsigned(v, array + 1, sizeBytes);
      int offsets = array + 1 + sizeBytes;
      int data = offsets + (count + 1) * offsetSize;
      for (int i = 0; i < count; i++) {
        int at = data + VariantUtil.readUnsigned(v, offsets + i * offsetSize, offsetSize);
        boolean found =
            depth > 0 && basicType(v, at) == VariantUtil.ARRAY
                ? inSomeCrushed(v, m, at, depth - 1)
                : holdsIn(v, m, at);
        if (found) {
          return true;
        }
      }
      return false;
    }

    private boolean holdsIn(byte[] v, byte[] m, int pos) {
      boolean leaf = isLeaf(v, pos);
      for (int i = 0; i < absent.length; i++) {
        boolean holds = leaf ? !absent[i] && matchers[i].test(v, pos) : absent[i];
        if (!holds) {
          return false;
        }
      }
      for (int i = 0; i < keys.length; i++) {
        if (!children[i].test(v, m, member(v, m, pos, keys[i]))) {
          return false;
        }
      }
      return true;
    }
  }

  /** Whether a leaf lies at {@code path[i:]} below the value at {@code pos}, in any element. */
  static boolean hasLeaf(byte[] v, byte[] m, int pos, byte[][] path, int i) {
    if (pos >= 0 && basicType(v, pos) == VariantUtil.ARRAY) {
      return crushedHasLeaf(v, m, pos, path, i, MAX_ARRAY_NESTING - 1);
    }
    return elementHasLeaf(v, m, pos, path, i);
  }

  private static boolean crushedHasLeaf(
      byte[] v, byte[] m, int array, byte[][] path, int i, int depth) {
    int typeInfo = (v[array] & 0xFF) >> VariantUtil.BASIC_TYPE_BITS;
    int sizeBytes = ((typeInfo >> 2) & 0x1) != 0 ? VariantUtil.U32_SIZE : 1;
    int offsetSize = (typeInfo & 0x3) + 1;
    int count = VariantUtil.readUnsigned(v, array + 1, sizeBytes);
    int offsets = array + 1 + sizeBytes;
    int data = offsets + (count + 1) * offsetSize;
    for (int k = 0; k < count; k++) {
      int at = data + VariantUtil.readUnsigned(v, offsets + k * offsetSize, offsetSize);
      boolean found =
          depth > 0 && basicType(v, at) == VariantUtil.ARRAY
              ? crushedHasLeaf(v, m, at, path, i, depth - 1)
              : elementHasLeaf(v, m, at, path, i);
      if (found) {
        return true;
      }
    }
    return false;
  }

  private static boolean elementHasLeaf(byte[] v, byte[] m, int pos, byte[][] path, int i) {
    if (i == path.length) {
      return isLeaf(v, pos);
    }
    return hasLeaf(v, m, member(v, m, pos, path[i]), path, i + 1);
  }

  // -- reading the VARIANT encoding at a position ------------------------------------------

  static int basicType(byte[] v, int pos) {
    return v[pos] & VariantUtil.BASIC_TYPE_MASK;
  }

  /** A present value that is neither an object nor an array. */
  static boolean isLeaf(byte[] v, int pos) {
    if (pos < 0) {
      return false;
    }
    int type = basicType(v, pos);
    return type != VariantUtil.OBJECT && type != VariantUtil.ARRAY;
  }

  /** The primitive type id of the value at {@code pos}, or -1 when it is not a primitive. */
  static int primitiveType(byte[] v, int pos) {
    int header = v[pos] & 0xFF;
    return (header & VariantUtil.BASIC_TYPE_MASK) == VariantUtil.PRIMITIVE
        ? header >> VariantUtil.BASIC_TYPE_BITS
        : -1;
  }

  /** Where a string value's UTF-8 bytes start, or -1 when the value is not a string. */
  static int textStart(byte[] v, int pos) {
    int header = v[pos] & 0xFF;
    if ((header & VariantUtil.BASIC_TYPE_MASK) == VariantUtil.SHORT_STR) {
      return pos + 1;
    }
    if (header >> VariantUtil.BASIC_TYPE_BITS == VariantUtil.LONG_STR
        && (header & VariantUtil.BASIC_TYPE_MASK) == VariantUtil.PRIMITIVE) {
      return pos + 1 + VariantUtil.U32_SIZE;
    }
    return -1;
  }

  /** The byte length of the string value at {@code pos} (see {@link #textStart}). */
  static int textLength(byte[] v, int pos) {
    int header = v[pos] & 0xFF;
    if ((header & VariantUtil.BASIC_TYPE_MASK) == VariantUtil.SHORT_STR) {
      return header >> VariantUtil.BASIC_TYPE_BITS;
    }
    return VariantUtil.readUnsigned(v, pos + 1, VariantUtil.U32_SIZE);
  }

  private static final double[] POWERS_OF_TEN = new double[23];

  static {
    POWERS_OF_TEN[0] = 1;
    for (int i = 1; i < POWERS_OF_TEN.length; i++) {
      POWERS_OF_TEN[i] = POWERS_OF_TEN[i - 1] * 10;
    }
  }

  /**
   * The number at {@code pos} as a DOUBLE, as {@code VariantFunctions.Number} (and {@code
   * try_variant_get(v, '$', 'double')}) gives it; NaN when the value is not a number. Decimals
   * whose unscaled value and power of ten are exact doubles are divided (what {@link
   * BigDecimal#doubleValue} does for them, correctly rounded), without a BigDecimal.
   */
  static double number(byte[] v, int pos) {
    switch (primitiveType(v, pos)) {
      case VariantUtil.INT1:
      case VariantUtil.INT2:
      case VariantUtil.INT4:
      case VariantUtil.INT8:
        return (double) VariantUtil.getLong(v, pos);
      case VariantUtil.DOUBLE:
        return VariantUtil.getDouble(v, pos);
      case VariantUtil.FLOAT:
        return (double) VariantUtil.getFloat(v, pos);
      case VariantUtil.DECIMAL4:
        return decimal(v, pos, littleEndian(v, pos + 2, 4));
      case VariantUtil.DECIMAL8:
        return decimal(v, pos, littleEndian(v, pos + 2, 8));
      case VariantUtil.DECIMAL16:
        return VariantUtil.getDecimal(v, pos).doubleValue();
      default:
        return Double.NaN;
    }
  }

  private static double decimal(byte[] v, int pos, long unscaled) {
    int scale = v[pos + 1] & 0xFF;
    if (Math.abs(unscaled) < 1L << 52) {
      if (scale == 0) {
        return (double) unscaled;
      }
      if (scale < POWERS_OF_TEN.length) {
        return (double) unscaled / POWERS_OF_TEN[scale];
      }
    }
    return VariantUtil.getDecimal(v, pos).doubleValue();
  }

  /** The signed little-endian integer of {@code size} bytes at {@code at}. */
  private static long littleEndian(byte[] v, int at, int size) {
    long result = 0;
    for (int i = size - 1; i >= 0; i--) {
      result = (result << 8) | (v[at + i] & 0xFF);
    }
    int unused = 64 - 8 * size;
    return (result << unused) >> unused;
  }

  /**
   * Where the member {@code key} of the object at {@code pos} starts, or -1 when the value is
   * missing, not an object, or has no such member. Small objects are searched in order, larger ones
   * by a binary search over their keys, sorted in Java string order (as Spark's {@code
   * Variant.getFieldByKey} searches them), comparing UTF-8 bytes without decoding them.
   */
  static int member(byte[] v, byte[] m, int pos, byte[] key) {
    if (pos < 0 || basicType(v, pos) != VariantUtil.OBJECT) {
      return -1;
    }
    int typeInfo = (v[pos] & 0xFF) >> VariantUtil.BASIC_TYPE_BITS;
    int sizeBytes = ((typeInfo >> 4) & 0x1) != 0 ? VariantUtil.U32_SIZE : 1;
    int idSize = ((typeInfo >> 2) & 0x3) + 1;
    int offsetSize = (typeInfo & 0x3) + 1;
    int size = VariantUtil.readUnsigned(v, pos + 1, sizeBytes);
    int ids = pos + 1 + sizeBytes;
    int offsets = ids + size * idSize;
    int data = offsets + (size + 1) * offsetSize;
    int metaOffsetSize = ((m[0] >> 6) & 0x3) + 1;
    int dictionarySize = VariantUtil.readUnsigned(m, 1, metaOffsetSize);
    int strings = 1 + (dictionarySize + 2) * metaOffsetSize;
    int low = 0;
    int high = size - 1;
    boolean linear = size <= VariantFunctions.LINEAR_SEARCH_FIELDS;
    while (low <= high) {
      int i = linear ? low : (low + high) >>> 1;
      int id = VariantUtil.readUnsigned(v, ids + i * idSize, idSize);
      int from =
          strings + VariantUtil.readUnsigned(m, 1 + (id + 1) * metaOffsetSize, metaOffsetSize);
      int to = strings + VariantUtil.readUnsigned(m, 1 + (id + 2) * metaOffsetSize, metaOffsetSize);
      int order = compareKeys(m, from, to, key);
      if (order == 0) {
        return data + VariantUtil.readUnsigned(v, offsets + i * offsetSize, offsetSize);
      }
      if (linear || order < 0) {
        low = i + 1;
      } else {
        high = i - 1;
      }
    }
    return -1;
  }

  /**
   * The order of the UTF-8 key {@code m[from, to)} against {@code key} as Java orders the decoded
   * strings (UTF-16 code units): byte order is code point order, except that code points past
   * U+FFFF (four-byte sequences, surrogate pairs in UTF-16) sort before U+E000..U+FFFF (three-byte
   * sequences led by EE or EF). Only the first differing byte decides, and it starts a character in
   * both keys or lies in characters of one length.
   */
  static int compareKeys(byte[] m, int from, int to, byte[] key) {
    int length = to - from;
    int common = Math.min(length, key.length);
    int differs = Arrays.mismatch(m, from, from + common, key, 0, common);
    if (differs < 0) {
      return Integer.compare(length, key.length);
    }
    return Integer.compare(utf16Rank(m[from + differs]), utf16Rank(key[differs]));
  }

  private static int utf16Rank(byte b) {
    int x = b & 0xFF;
    if (x < 0xEE) {
      return x;
    }
    return x >= 0xF0 ? x - 2 : x + 5; // F0..F4 -> EE..F2, EE..EF -> F3..F4
  }

  // -- matchers (each sees a leaf: a present value, neither object nor array) -----------------

  private abstract static class Matcher {
    abstract boolean test(byte[] v, int pos);
  }

  /** Any of a step's matchers accepts the leaf; exact strings are looked up together. */
  static final class AnyOf extends Matcher {
    private final Strings strings;
    private final Matcher[] others;

    AnyOf(Strings strings, Matcher[] others) {
      this.strings = strings;
      this.others = others;
    }

    @Override
    boolean test(byte[] v, int pos) {
      if (strings != null) {
        int start = textStart(v, pos);
        if (start >= 0 && strings.contains(v, start, textLength(v, pos))) {
          return true;
        }
      }
      for (Matcher matcher : others) {
        if (matcher.test(v, pos)) {
          return true;
        }
      }
      return false;
    }
  }

  private static AnyOf anyOf(JsonNode list) {
    if (!list.isArray()) {
      throw new IllegalArgumentException("matches: matchers must be an array: " + list);
    }
    List<byte[]> strings = new ArrayList<>();
    List<Matcher> others = new ArrayList<>();
    for (JsonNode matcher : list) {
      if (matcher.size() == 1 && matcher.has("string")) {
        strings.add(utf8(requireText(matcher.get("string"), "string")));
      } else {
        others.add(matcher(matcher));
      }
    }
    return new AnyOf(
        strings.isEmpty() ? null : new Strings(strings), others.toArray(new Matcher[0]));
  }

  private static Matcher matcher(JsonNode matcher) {
    if (!matcher.isObject() || matcher.size() != 1) {
      throw new IllegalArgumentException("matches: a matcher is a one-member object: " + matcher);
    }
    String type = matcher.fieldNames().next();
    JsonNode operand = matcher.get(type);
    switch (type) {
      case "number":
        return new ExactNumber(requireNumber(operand, type));
      case "literal":
        return new ExactLiteral(operand);
      case "ip":
        return new IpRange(requireText(operand.path(0), type), requireText(operand.path(1), type));
      case "prefix":
        return new Affix(utf8(requireText(operand, type)), true);
      case "suffix":
        return new Affix(utf8(requireText(operand, type)), false);
      case "prefix-ignore-case":
        return new AffixIgnoringCase(requireText(operand, type), true);
      case "suffix-ignore-case":
        return new AffixIgnoringCase(requireText(operand, type), false);
      case "equals-ignore-case":
        return new EqualsIgnoringCase(requireText(operand, type));
      case "wildcard":
        return new Wildcard(operand);
      case "numeric":
        return new NumericRange(operand);
      case "anything-but":
        return new AnythingBut(anyOf(operand));
      case "exists":
        return new Exists();
      default:
        throw new IllegalArgumentException("matches: unknown matcher " + matcher);
    }
  }

  /** Exact strings: a few compared in turn, more looked up in a hash table of their bytes. */
  static final class Strings {
    private static final int LINEAR = 8;

    /** The strings (compared in turn), or the hash table (open addressing, null: free). */
    private final byte[][] table;

    private final boolean hashed;

    Strings(List<byte[]> strings) {
      hashed = strings.size() > LINEAR;
      if (!hashed) {
        table = strings.toArray(new byte[0][]);
        return;
      }
      int capacity = Integer.highestOneBit(strings.size() * 4 - 1) << 1; // at most 1/4 full
      table = new byte[capacity][];
      for (byte[] text : strings) {
        int slot = hash(text, 0, text.length) & (capacity - 1);
        while (table[slot] != null && !Arrays.equals(table[slot], text)) {
          slot = (slot + 1) & (capacity - 1);
        }
        table[slot] = text;
      }
    }

    boolean contains(byte[] v, int start, int length) {
      if (!hashed) {
        for (byte[] text : table) {
          if (equalBytes(v, start, length, text)) {
            return true;
          }
        }
        return false;
      }
      int mask = table.length - 1;
      for (int slot = hash(v, start, length) & mask;
          table[slot] != null;
          slot = (slot + 1) & mask) {
        if (equalBytes(v, start, length, table[slot])) {
          return true;
        }
      }
      return false;
    }

    private static int hash(byte[] bytes, int start, int length) {
      int h = length;
      for (int i = start; i < start + length; i++) {
        h = 31 * h + bytes[i];
      }
      return h ^ (h >>> 16);
    }
  }

  static final class ExactNumber extends Matcher {
    private final double value;

    ExactNumber(double value) {
      this.value = value;
    }

    @Override
    boolean test(byte[] v, int pos) {
      return number(v, pos) == value; // NaN (not a number) never equals; value is finite
    }
  }

  static final class ExactLiteral extends Matcher {
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

  static final class Exists extends Matcher {
    @Override
    boolean test(byte[] v, int pos) {
      return true;
    }
  }

  static final class AnythingBut extends Matcher {
    private final AnyOf excluded;

    AnythingBut(AnyOf excluded) {
      this.excluded = excluded;
    }

    @Override
    boolean test(byte[] v, int pos) {
      return !excluded.test(v, pos);
    }
  }

  static final class NumericRange extends Matcher {
    private final double lower;
    private final boolean lowerInclusive;
    private final double upper;
    private final boolean upperInclusive;

    NumericRange(JsonNode bounds) {
      JsonNode low = bounds.path(0);
      JsonNode high = bounds.path(2);
      lower = low.isNull() ? Double.NEGATIVE_INFINITY : requireNumber(low, "numeric");
      lowerInclusive = bounds.path(1).asBoolean(false) && !low.isNull();
      upper = high.isNull() ? Double.POSITIVE_INFINITY : requireNumber(high, "numeric");
      upperInclusive = bounds.path(3).asBoolean(false) && !high.isNull();
    }

    @Override
    boolean test(byte[] v, int pos) {
      double d = number(v, pos);
      if (!Double.isFinite(d)) {
        return false; // not a number (NaN) or not finite
      }
      boolean above = d > lower || (lowerInclusive && d == lower);
      boolean below = d < upper || (upperInclusive && d == upper);
      return above && below;
    }
  }

  /** A string starting (or ending) with the operand, byte for byte. */
  static final class Affix extends Matcher {
    private final byte[] affix;
    private final boolean prefix;

    Affix(byte[] affix, boolean prefix) {
      this.affix = affix;
      this.prefix = prefix;
    }

    @Override
    boolean test(byte[] v, int pos) {
      int start = textStart(v, pos);
      if (start < 0) {
        return false;
      }
      int length = textLength(v, pos);
      if (length < affix.length) {
        return false;
      }
      int from = prefix ? start : start + length - affix.length;
      return Arrays.equals(v, from, from + affix.length, affix, 0, affix.length);
    }
  }

  /**
   * {@code lower(text)} as Spark's {@code lower()} computes it for the default collation with ICU
   * case mappings ({@code spark.sql.icu.caseMappings.enabled}, the default): ASCII text byte by
   * byte, anything else through ICU.
   */
  static byte[] lower(String text) {
    return CollationAwareUTF8String.toLowerCase(UTF8String.fromString(text)).getBytes();
  }

  /**
   * The lower-cased text of the string at {@code start}, or null when the text is ASCII (then
   * lower-casing maps A-Z to a-z and nothing else, and callers compare in place).
   */
  static byte[] lowerUnlessAscii(byte[] v, int start, int length) {
    for (int i = start; i < start + length; i++) {
      if (v[i] < 0) {
        return CollationAwareUTF8String.toLowerCase(UTF8String.fromBytes(v, start, length))
            .getBytes();
      }
    }
    return null;
  }

  /** Whether {@code v[at, at + expected.length)} lower-cased (ASCII) is {@code expected}. */
  static boolean equalsAsciiLowered(byte[] v, int at, byte[] expected) {
    for (int i = 0; i < expected.length; i++) {
      byte b = v[at + i];
      if (b >= 'A' && b <= 'Z') {
        b += 'a' - 'A';
      }
      if (b != expected[i]) {
        return false;
      }
    }
    return true;
  }

  /** {@code startswith(lower(text), lower(affix))} (or endswith). */
  static final class AffixIgnoringCase extends Matcher {
    private final byte[] affix;
    private final boolean prefix;

    AffixIgnoringCase(String affix, boolean prefix) {
      this.affix = lower(affix);
      this.prefix = prefix;
    }

    @Override
    boolean test(byte[] v, int pos) {
      int start = textStart(v, pos);
      if (start < 0) {
        return false;
      }
      int length = textLength(v, pos);
      byte[] lowered = lowerUnlessAscii(v, start, length);
      if (lowered != null) {
        start = 0;
        length = lowered.length;
      }
      if (length < affix.length) {
        return false;
      }
      int from = prefix ? start : start + length - affix.length;
      if (lowered != null) {
        return Arrays.equals(lowered, from, from + affix.length, affix, 0, affix.length);
      }
      return equalsAsciiLowered(v, from, affix);
    }
  }

  /** {@code lower(text) = lower(operand)}. */
  static final class EqualsIgnoringCase extends Matcher {
    private final byte[] expected;

    EqualsIgnoringCase(String expected) {
      this.expected = lower(expected);
    }

    @Override
    boolean test(byte[] v, int pos) {
      int start = textStart(v, pos);
      if (start < 0) {
        return false;
      }
      int length = textLength(v, pos);
      byte[] lowered = lowerUnlessAscii(v, start, length);
      if (lowered != null) {
        return Arrays.equals(lowered, expected);
      }
      return length == expected.length && equalsAsciiLowered(v, start, expected);
    }
  }

  /**
   * A wildcard by {@code matchers.wildcard_matches}: the text starts with the first segment and
   * ends with the last one without overlap, and the middle ones follow in order in between, each at
   * its leftmost occurrence (linear time, no backtracking). Bytes of UTF-8 text match where its
   * characters do.
   */
  static final class Wildcard extends Matcher {
    private final byte[][] segments;

    Wildcard(JsonNode segments) {
      if (!segments.isArray() || segments.size() == 0) {
        throw new IllegalArgumentException("matches: a wildcard lists its segments: " + segments);
      }
      this.segments = new byte[segments.size()][];
      for (int i = 0; i < this.segments.length; i++) {
        this.segments[i] = utf8(requireText(segments.get(i), "wildcard"));
      }
    }

    @Override
    boolean test(byte[] v, int pos) {
      int start = textStart(v, pos);
      if (start < 0) {
        return false;
      }
      int length = textLength(v, pos);
      if (segments.length == 1) {
        return equalBytes(v, start, length, segments[0]);
      }
      byte[] first = segments[0];
      byte[] last = segments[segments.length - 1];
      int end = start + length - last.length;
      if (end < start + first.length
          || !Arrays.equals(v, start, start + first.length, first, 0, first.length)
          || !Arrays.equals(v, end, end + last.length, last, 0, last.length)) {
        return false;
      }
      int position = start + first.length;
      for (int i = 1; i < segments.length - 1; i++) {
        int found = indexOf(v, segments[i], position, end);
        if (found < 0) {
          return false;
        }
        position = found + segments[i].length;
      }
      return true;
    }

    /** Where {@code needle} first lies inside {@code v[from, to)}, or -1. */
    private static int indexOf(byte[] v, byte[] needle, int from, int to) {
      int lastStart = to - needle.length;
      if (needle.length == 0) {
        return from <= to ? from : -1;
      }
      byte head = needle[0];
      for (int i = from; i <= lastStart; i++) {
        if (v[i] == head && Arrays.equals(v, i, i + needle.length, needle, 0, needle.length)) {
          return i;
        }
      }
      return -1;
    }
  }

  /**
   * A string holding an IP address (as {@code ip.parse_ip} reads it) between two addresses of one
   * version, inclusive. Keys are {@code ip.ip_key}'s: {@code "4:"} and 8 hex digits, or {@code
   * "6:"} and 32.
   */
  static final class IpRange extends Matcher {
    private final int version;
    private final long lowHigh;
    private final long lowLow;
    private final long highHigh;
    private final long highLow;

    IpRange(String low, String high) {
      version = keyVersion(low);
      if (keyVersion(high) != version) {
        throw new IllegalArgumentException("matches: an IP range of two versions: " + low + high);
      }
      lowHigh = keyPart(low, 0);
      lowLow = keyPart(low, 1);
      highHigh = keyPart(high, 0);
      highLow = keyPart(high, 1);
    }

    private static int keyVersion(String key) {
      if (key.startsWith("4:") && key.length() == 10) {
        return 4;
      }
      if (key.startsWith("6:") && key.length() == 34) {
        return 6;
      }
      throw new IllegalArgumentException("matches: not an IP key: " + key);
    }

    /** The high (0) or low (1) 64 bits of a key's value (an IPv4 value is all low bits). */
    private static long keyPart(String key, int part) {
      String digits = key.substring(2);
      if (digits.length() == 8) {
        return part == 0 ? 0 : Long.parseUnsignedLong(digits, 16);
      }
      return Long.parseUnsignedLong(digits.substring(16 * part, 16 * part + 16), 16);
    }

    @Override
    boolean test(byte[] v, int pos) {
      int start = textStart(v, pos);
      if (start < 0) {
        return false;
      }
      int length = textLength(v, pos);
      long high;
      long low;
      if (version == 4) {
        low = ipv4(v, start, length);
        if (low < 0) {
          return false;
        }
        high = 0;
      } else {
        int gap = ipv6Gap(v, start, length);
        if (gap == NOT_IPV6) {
          return false;
        }
        high = ipv6Bits(v, start, length, gap, 0);
        low = ipv6Bits(v, start, length, gap, 1);
      }
      return compare(high, low, lowHigh, lowLow) >= 0 && compare(high, low, highHigh, highLow) <= 0;
    }

    private static int compare(long high, long low, long otherHigh, long otherLow) {
      int order = Long.compareUnsigned(high, otherHigh);
      return order != 0 ? order : Long.compareUnsigned(low, otherLow);
    }
  }

  /**
   * The value of a dotted-quad IPv4 address ({@code ip.IPV4_REGEX}: four parts 0-255 in decimal, no
   * leading zeros), or -1.
   */
  static long ipv4(byte[] v, int start, int length) {
    if (length < 7 || length > 15) {
      return -1;
    }
    long value = 0;
    int i = start;
    int end = start + length;
    for (int parts = 1; ; parts++) {
      int from = i;
      int part = 0;
      while (i < end && i - from < 4 && v[i] >= '0' && v[i] <= '9') {
        part = part * 10 + (v[i] - '0');
        i++;
      }
      int digits = i - from;
      if (digits == 0 || digits > 3 || part > 255 || (digits > 1 && v[from] == '0')) {
        return -1;
      }
      value = value << 8 | part;
      if (parts == 4) {
        return i == end ? value : -1;
      }
      if (i == end || v[i] != '.') {
        return -1;
      }
      i++;
    }
  }

  static final int NOT_IPV6 = -2;

  /**
   * Whether {@code v[start, start + length)} is an IPv6 address ({@code ip.IPV6_REGEX}: eight
   * groups of 1-4 hex digits, or 7 at most around exactly one {@code ::}): {@link #NOT_IPV6} when
   * not, else where its {@code ::} is ({@code -1}: none).
   */
  static int ipv6Gap(byte[] v, int start, int length) {
    if (length < 2 || length > 39) {
      return NOT_IPV6;
    }
    int end = start + length;
    int gap = -1;
    for (int i = start; i + 1 < end; i++) {
      if (v[i] == ':' && v[i + 1] == ':') {
        if (gap >= 0) {
          return NOT_IPV6; // a second "::" (":::" holds two)
        }
        gap = i;
      }
    }
    if (gap < 0) {
      return groupCount(v, start, end) == 8 ? -1 : NOT_IPV6;
    }
    int head = gap == start ? 0 : groupCount(v, start, gap);
    int tail = gap + 2 == end ? 0 : groupCount(v, gap + 2, end);
    return head >= 0 && tail >= 0 && head + tail <= 7 ? gap : NOT_IPV6;
  }

  /**
   * How many hex groups of 1-4 digits, separated by single colons, {@code v[from, to)} holds; -1
   * when it is not such a list.
   */
  private static int groupCount(byte[] v, int from, int to) {
    int count = 0;
    int digits = 0;
    for (int i = from; i < to; i++) {
      if (v[i] == ':') {
        if (digits == 0) {
          return -1;
        }
        count++;
        digits = 0;
      } else if (hexDigit(v[i]) < 0 || ++digits > 4) {
        return -1;
      }
    }
    return digits == 0 ? -1 : count + 1;
  }

  /**
   * The high ({@code half} 0) or low (1) 64 bits of the IPv6 address {@code v[start, start +
   * length)}, whose {@code ::} is at {@code gap} (see {@link #ipv6Gap}): the groups after it are
   * the last ones, zeros stand between.
   */
  static long ipv6Bits(byte[] v, int start, int length, int gap, int half) {
    int end = start + length;
    long bits = 0;
    int index = 0; // of the group read next, 0-7
    int i = start;
    while (i < end) {
      if (i == gap) {
        index = 8 - (gap + 2 == end ? 0 : groupCount(v, gap + 2, end));
        i += 2;
        continue;
      }
      int group = 0;
      while (i < end && v[i] != ':') {
        group = group << 4 | hexDigit(v[i]);
        i++;
      }
      if (index / 4 == half) {
        bits |= (long) group << (16 * (3 - index % 4));
      }
      index++;
      if (i < end && i != gap) {
        i++; // the colon between two groups
      }
    }
    return bits;
  }

  private static int hexDigit(byte b) {
    if (b >= '0' && b <= '9') {
      return b - '0';
    }
    if (b >= 'a' && b <= 'f') {
      return b - 'a' + 10;
    }
    if (b >= 'A' && b <= 'F') {
      return b - 'A' + 10;
    }
    return -1;
  }

  // -- helpers -------------------------------------------------------------------------------

  static boolean equalBytes(byte[] v, int start, int length, byte[] expected) {
    return length == expected.length
        && Arrays.equals(v, start, start + length, expected, 0, expected.length);
  }

  private static byte[] utf8(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  private static String requireText(JsonNode node, String what) {
    if (node == null || !node.isTextual()) {
      throw new IllegalArgumentException("matches: " + what + " takes a string, got " + node);
    }
    return node.textValue();
  }

  private static double requireNumber(JsonNode node, String what) {
    if (node == null || !node.isNumber() || !Double.isFinite(node.doubleValue())) {
      throw new IllegalArgumentException("matches: " + what + " takes a finite number: " + node);
    }
    return node.doubleValue();
  }
}
