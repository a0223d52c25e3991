package io.sluice.spark.patterns;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Compiles the JSON text of an event-pattern rule's steps ({@link EventPatterns}) into the tree
 * that decides them ({@link Node}, {@link Element}, the matchers).
 */
final class StepCompiler {
  static final ObjectMapper JSON = new ObjectMapper();

  private StepCompiler() {}

  /** The tree deciding the steps in {@code text}; IllegalArgumentException when malformed. */
  static Node compile(String text) {
    JsonNode root;
    try {
      root = JSON.readTree(text);
    } catch (IOException e) {
      throw new IllegalArgumentException("matches: the steps are not JSON: " + e.getMessage(), e);
    }
    return compile(root);
  }

  /** The tree deciding the steps of the parsed JSON array {@code root}. */
  static Node compile(JsonNode root) {
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

  static byte[] utf8(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  static String requireText(JsonNode node, String what) {
    if (node == null || !node.isTextual()) {
      throw new IllegalArgumentException("matches: " + what + " takes a string, got " + node);
    }
    return node.textValue();
  }

  static double requireNumber(JsonNode node, String what) {
    if (node == null || !node.isNumber() || !Double.isFinite(node.doubleValue())) {
      throw new IllegalArgumentException("matches: " + what + " takes a finite number: " + node);
    }
    return node.doubleValue();
  }
}
