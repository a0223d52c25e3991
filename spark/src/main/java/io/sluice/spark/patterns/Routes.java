package io.sluice.spark.patterns;

import static io.sluice.spark.variant.VariantBytes.basicType;
import static io.sluice.spark.variant.VariantBytes.isLeaf;
import static io.sluice.spark.variant.VariantBytes.member;
import static io.sluice.spark.variant.VariantBytes.number;
import static io.sluice.spark.variant.VariantBytes.primitiveType;
import static io.sluice.spark.variant.VariantBytes.textLength;
import static io.sluice.spark.variant.VariantBytes.textStart;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.types.variant.VariantUtil;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * A bus's routing on one top-level field: which targets an event goes to, deciding many rules'
 * patterns in one call, behind {@code sluice_fn.variant.route(node, routes)}.
 *
 * <p>{@code routes} is the JSON text {@code pipelines.patterns.route_plans} writes:
 *
 * <pre>
 * {"rules": 2,
 *  "entries": [{"rule": 0, "targets": [0, 1], "steps": [...],
 *               "key": {"path": ["bucket"], "values": [{"number": 3.0}, {"string": "x"}]}},
 *              {"rule": 1, "targets": [2], "steps": [...]}]}
 * </pre>
 *
 * Each entry is one alternative of a rule's pattern whose steps all start at this field, in the
 * form {@link EventPatterns} decides them; the event goes to the entry's targets when its steps
 * hold, each rule's targets once however many of its alternatives hold. An entry may name a
 * <em>key</em>: one of its steps whose matchers are all exact values (strings, numbers, JSON
 * literals). Keyed entries on the same path are indexed by value: the values of the event's leaves
 * at that path (arrays crushed as the steps crush them) are looked up, and only the entries found
 * are decided in full. An entry can only hold when one of its key's values is among those leaves,
 * so the lookup never drops a match: 100 rules on {@code data.bucket} cost one field read and a
 * hash lookup, not 100 pattern evaluations.
 *
 * <p>The result lists the targets in entry order; never NULL (an empty array: no rule holds).
 */
public final class Routes {
  private static final LiteralCache<Routes> PLANS =
      new LiteralCache<>("route: the routes", Routes::compile);

  private final Node[] programs;
  private final int[][] targets;
  private final int[] ruleOf;
  private final int rules;

  /** Entries decided for every event (no key). */
  private final boolean[] keyed;

  private final KeyIndex[] indexes;

  private Routes(
      Node[] programs, int[][] targets, int[] ruleOf, int rules, boolean[] keyed, KeyIndex[] idx) {
    this.programs = programs;
    this.targets = targets;
    this.ruleOf = ruleOf;
    this.rules = rules;
    this.keyed = keyed;
    this.indexes = idx;
  }

  /** The targets of the rules whose steps hold below {@code node} (null: a missing field). */
  public static int[] route(VariantVal node, UTF8String routes) {
    Routes plan = PLANS.get(routes);
    byte[] v = node == null ? null : node.getValue();
    byte[] m = node == null ? null : node.getMetadata();
    int pos = node == null ? -1 : 0;
    Scratch scratch = SCRATCH.get().begin(plan.programs.length, plan.rules);
    if (pos >= 0) {
      for (KeyIndex index : plan.indexes) {
        index.collect(v, m, pos, 0, scratch);
      }
    }
    int[] out = scratch.out;
    int count = 0;
    for (int e = 0; e < plan.programs.length; e++) {
      int rule = plan.ruleOf[e];
      if ((plan.keyed[e] && !scratch.isCandidate(e))
          || scratch.ruleDone(rule)
          || !plan.programs[e].test(v, m, pos)) {
        continue;
      }
      scratch.doneRule(rule);
      for (int target : plan.targets[e]) {
        if (count == out.length) {
          out = scratch.out = Arrays.copyOf(out, out.length * 2);
        }
        out[count++] = target;
      }
    }
    return Arrays.copyOf(out, count);
  }

  // -- compiling ------------------------------------------------------------------------------

  static Routes compile(String text) {
    JsonNode root;
    try {
      root = StepCompiler.JSON.readTree(text);
    } catch (IOException e) {
      throw new IllegalArgumentException("route: the routes are not JSON: " + e.getMessage(), e);
    }
    if (root == null || !root.isObject() || !root.path("entries").isArray()) {
      throw new IllegalArgumentException("route: the routes are an object with entries");
    }
    JsonNode entries = root.get("entries");
    int rules = root.path("rules").asInt(-1);
    int n = entries.size();
    Node[] programs = new Node[n];
    int[][] targets = new int[n][];
    int[] ruleOf = new int[n];
    boolean[] keyed = new boolean[n];
    Map<String, KeyIndex.Builder> builders = new LinkedHashMap<>();
    for (int e = 0; e < n; e++) {
      JsonNode entry = entries.get(e);
      ruleOf[e] = entry.path("rule").asInt(-1);
      if (ruleOf[e] < 0 || ruleOf[e] >= rules) {
        throw new IllegalArgumentException("route: an entry's rule is out of range: " + entry);
      }
      JsonNode list = entry.path("targets");
      if (!list.isArray()) {
        throw new IllegalArgumentException("route: an entry needs a targets array: " + entry);
      }
      targets[e] = new int[list.size()];
      for (int i = 0; i < targets[e].length; i++) {
        if (!list.get(i).canConvertToInt()) {
          throw new IllegalArgumentException("route: a target is an integer: " + entry);
        }
        targets[e][i] = list.get(i).intValue();
      }
      programs[e] = StepCompiler.compile(entry.get("steps"));
      JsonNode key = entry.get("key");
      if (key != null && !key.isNull()) {
        keyed[e] = true;
        JsonNode path = key.path("path");
        if (!path.isArray()) {
          throw new IllegalArgumentException("route: a key needs a path array: " + entry);
        }
        builders.computeIfAbsent(path.toString(), p -> new KeyIndex.Builder(path)).add(e, key);
      }
    }
    KeyIndex[] indexes = new KeyIndex[builders.size()];
    int i = 0;
    for (KeyIndex.Builder builder : builders.values()) {
      indexes[i++] = builder.build();
    }
    return new Routes(programs, targets, ruleOf, rules, keyed, indexes);
  }

  // -- per-thread scratch space ------------------------------------------------------------------

  private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

  /** Marks of one call, by generation (nothing to clear between calls). */
  static final class Scratch {
    private int generation;
    private int[] candidates = new int[0];
    private int[] done = new int[0];
    int[] out = new int[16];

    Scratch begin(int entries, int rules) {
      if (candidates.length < entries) {
        candidates = new int[entries];
      }
      if (done.length < rules) {
        done = new int[rules];
      }
      if (++generation == 0) { // wrapped: old marks could collide
        Arrays.fill(candidates, 0);
        Arrays.fill(done, 0);
        generation = 1;
      }
      return this;
    }

    void candidate(int entry) {
      candidates[entry] = generation;
    }

    boolean isCandidate(int entry) {
      return candidates[entry] == generation;
    }

    boolean ruleDone(int rule) {
      return done[rule] == generation;
    }

    void doneRule(int rule) {
      done[rule] = generation;
    }
  }

  // -- an index of keyed entries on one path
  // -------------------------------------------------------

  /** The keyed entries of one path, by exact value: strings, numbers and JSON literals. */
  static final class KeyIndex {
    private static final int[] NONE = new int[0];

    private final byte[][] path;

    /** Strings: open addressing on their UTF-8 bytes (null: free), with the entries of each. */
    private final byte[][] strings;

    private final int[][] stringEntries;

    /** Numbers: sorted distinct doubles (-0.0 as 0.0), with the entries of each. */
    private final double[] numbers;

    private final int[][] numberEntries;

    /** Literals: the entries of JSON null, true and false. */
    private final int[] nulls;

    private final int[] trues;
    private final int[] falses;

    private KeyIndex(
        byte[][] path,
        byte[][] strings,
        int[][] stringEntries,
        double[] numbers,
        int[][] numberEntries,
        int[] nulls,
        int[] trues,
        int[] falses) {
      this.path = path;
      this.strings = strings;
      this.stringEntries = stringEntries;
      this.numbers = numbers;
      this.numberEntries = numberEntries;
      this.nulls = nulls;
      this.trues = trues;
      this.falses = falses;
    }

    /**
     * Marks the entries keyed on a value of a leaf at {@code path[i:]} below the value at {@code
     * pos}: the leaves {@link Node#hasLeaf} would visit, arrays crushed the same way.
     */
    void collect(byte[] v, byte[] m, int pos, int i, Scratch scratch) {
      if (pos < 0) {
        return;
      }
      if (basicType(v, pos) == VariantUtil.ARRAY) {
        crushed(v, m, pos, i, EventPatterns.MAX_ARRAY_NESTING - 1, scratch);
      } else {
        element(v, m, pos, i, scratch);
      }
    }

    private void crushed(byte[] v, byte[] m, int array, int i, int depth, Scratch scratch) {
      int typeInfo = (v[array] & 0xFF) >> VariantUtil.BASIC_TYPE_BITS;
      int sizeBytes = ((typeInfo >> 2) & 0x1) != 0 ? VariantUtil.U32_SIZE : 1;
      int offsetSize = (typeInfo & 0x3) + 1;
      int count = VariantUtil.readUnsigned(v, array + 1, sizeBytes);
      int offsets = array + 1 + sizeBytes;
      int data = offsets + (count + 1) * offsetSize;
      for (int k = 0; k < count; k++) {
        int at = data + VariantUtil.readUnsigned(v, offsets + k * offsetSize, offsetSize);
        if (depth > 0 && basicType(v, at) == VariantUtil.ARRAY) {
          crushed(v, m, at, i, depth - 1, scratch);
        } else {
          element(v, m, at, i, scratch);
        }
      }
    }

    private void element(byte[] v, byte[] m, int pos, int i, Scratch scratch) {
      if (i < path.length) {
        collect(v, m, member(v, m, pos, path[i]), i + 1, scratch);
      } else if (isLeaf(v, pos)) {
        for (int entry : entriesOf(v, pos)) {
          scratch.candidate(entry);
        }
      }
    }

    /** The entries keyed on the leaf at {@code pos}'s value. */
    int[] entriesOf(byte[] v, int pos) {
      int start = textStart(v, pos);
      if (start >= 0) {
        int length = textLength(v, pos);
        int mask = strings.length - 1;
        for (int slot = hash(v, start, length) & mask;
            strings[slot] != null;
            slot = (slot + 1) & mask) {
          if (Matcher.equalBytes(v, start, length, strings[slot])) {
            return stringEntries[slot];
          }
        }
        return NONE;
      }
      switch (primitiveType(v, pos)) {
        case VariantUtil.NULL:
          return nulls;
        case VariantUtil.TRUE:
          return trues;
        case VariantUtil.FALSE:
          return falses;
        default:
          double value = number(v, pos);
          if (Double.isNaN(value)) {
            return NONE;
          }
          int at = Arrays.binarySearch(numbers, value + 0.0); // -0.0 == 0.0, as ExactNumber
          return at >= 0 ? numberEntries[at] : NONE;
      }
    }

    static int hash(byte[] bytes, int start, int length) {
      int h = length;
      for (int i = start; i < start + length; i++) {
        h = 31 * h + bytes[i];
      }
      return h ^ (h >>> 16);
    }

    /** Collects the keyed entries of one path. */
    static final class Builder {
      private final byte[][] path;
      private final Map<String, List<Integer>> strings = new LinkedHashMap<>();
      private final Map<Double, List<Integer>> numbers = new LinkedHashMap<>();
      private final List<Integer> nulls = new ArrayList<>();
      private final List<Integer> trues = new ArrayList<>();
      private final List<Integer> falses = new ArrayList<>();

      Builder(JsonNode path) {
        this.path = new byte[path.size()][];
        for (int i = 0; i < path.size(); i++) {
          this.path[i] = StepCompiler.utf8(StepCompiler.requireText(path.get(i), "a path key"));
        }
      }

      void add(int entry, JsonNode key) {
        JsonNode values = key.path("values");
        if (!values.isArray() || values.size() == 0) {
          throw new IllegalArgumentException("route: a key needs values: " + key);
        }
        for (JsonNode value : values) {
          if (value.size() != 1) {
            throw new IllegalArgumentException("route: a key value is a one-member object");
          }
          if (value.has("string")) {
            String text = StepCompiler.requireText(value.get("string"), "string");
            strings.computeIfAbsent(text, t -> new ArrayList<>()).add(entry);
          } else if (value.has("number")) {
            double number = StepCompiler.requireNumber(value.get("number"), "number") + 0.0;
            numbers.computeIfAbsent(number, d -> new ArrayList<>()).add(entry);
          } else if (value.has("literal")) {
            JsonNode literal = value.get("literal");
            if (literal.isNull()) {
              nulls.add(entry);
            } else if (literal.isBoolean()) {
              (literal.booleanValue() ? trues : falses).add(entry);
            } else {
              throw new IllegalArgumentException("route: a literal is true, false or null");
            }
          } else {
            throw new IllegalArgumentException("route: a key value is exact: " + value);
          }
        }
      }

      KeyIndex build() {
        int capacity = Integer.highestOneBit(Math.max(strings.size(), 1) * 4 - 1) << 1;
        byte[][] table = new byte[capacity][];
        int[][] tableEntries = new int[capacity][];
        for (Map.Entry<String, List<Integer>> item : strings.entrySet()) {
          byte[] text = StepCompiler.utf8(item.getKey());
          int slot = hash(text, 0, text.length) & (capacity - 1);
          while (table[slot] != null) {
            slot = (slot + 1) & (capacity - 1);
          }
          table[slot] = text;
          tableEntries[slot] = distinct(item.getValue());
        }
        double[] sorted =
            numbers.keySet().stream().mapToDouble(Double::doubleValue).sorted().toArray();
        int[][] byNumber = new int[sorted.length][];
        for (int i = 0; i < sorted.length; i++) {
          byNumber[i] = distinct(numbers.get(sorted[i]));
        }
        return new KeyIndex(
            path,
            table,
            tableEntries,
            sorted,
            byNumber,
            distinct(nulls),
            distinct(trues),
            distinct(falses));
      }

      private static int[] distinct(List<Integer> entries) {
        return entries.stream().mapToInt(Integer::intValue).distinct().toArray();
      }
    }
  }
}
