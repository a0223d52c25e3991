package io.sluice.spark.variant;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.spark.patterns.LiteralCache;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The member paths a pruned parse keeps ({@code parse_pruned}), as a tree of member names: a node
 * where a path ends keeps the whole value found there. Immutable once built; compiled once per
 * distinct literal.
 */
public final class PathTree {
  /** The most paths one literal may name: a pattern's fields, far below this. */
  static final int MAX_PATHS = 1024;

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final LiteralCache<PathTree> TREES =
      new LiteralCache<>("parse_pruned: the paths", PathTree::compile);

  private final Map<String, PathTree> children = new HashMap<>();
  private boolean keepsAll;

  /** The children's names in UTF-8 (made on first use; the same array from any thread). */
  private volatile byte[][] names;

  private PathTree() {}

  /** Whether the whole value here is kept (a path ends here). */
  public boolean keepsAll() {
    return keepsAll;
  }

  /** The subtree below member {@code name}; null when no path goes through it. */
  public PathTree child(String name) {
    return children.get(name);
  }

  /**
   * Whether a path starts at the object member whose name's opening quote is at {@code start} in
   * {@code json} (a name without escapes: its bytes are its text).
   */
  public boolean startsAt(byte[] json, int start) {
    if (names == null) {
      names =
          children.keySet().stream()
              .map(k -> k.getBytes(StandardCharsets.UTF_8))
              .toArray(byte[][]::new);
    }
    for (byte[] name : names) {
      if (JsonScan.nameIs(json, start, name)) {
        return true;
      }
    }
    return false;
  }

  /** The tree of {@code paths} (JSON text), once per distinct literal ({@link LiteralCache}). */
  public static PathTree compiled(UTF8String paths) {
    return TREES.get(paths);
  }

  /** The tree of the JSON array of paths {@code text}; IllegalArgumentException when malformed. */
  public static PathTree compile(String text) {
    JsonNode root;
    try {
      root = JSON.readTree(text);
    } catch (IOException e) {
      throw new IllegalArgumentException("parse_pruned: the paths are not JSON: " + e.getMessage());
    }
    if (root == null || !root.isArray() || root.size() > MAX_PATHS) {
      throw new IllegalArgumentException(
          "parse_pruned: the paths must be a JSON array of at most " + MAX_PATHS + " paths");
    }
    PathTree tree = new PathTree();
    for (JsonNode path : root) {
      if (!path.isArray()) {
        throw new IllegalArgumentException("parse_pruned: a path must be an array: " + path);
      }
      PathTree node = tree;
      for (JsonNode key : path) {
        if (!key.isTextual()) {
          throw new IllegalArgumentException("parse_pruned: a path key must be a string: " + key);
        }
        node = node.children.computeIfAbsent(key.textValue(), k -> new PathTree());
      }
      node.keepsAll = true;
    }
    return tree;
  }
}
