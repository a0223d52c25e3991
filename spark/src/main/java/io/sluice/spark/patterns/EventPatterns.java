package io.sluice.spark.patterns;

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
public final class EventPatterns {
  /** How deep arrays directly inside arrays are searched (model.MAX_ARRAY_NESTING). */
  static final int MAX_ARRAY_NESTING = 3;

  private EventPatterns() {}

  /** Whether {@code steps} hold below {@code node} (null: a missing field); never null. */
  public static boolean matches(VariantVal node, UTF8String steps) {
    Node program = compiled(steps);
    if (node == null) {
      return program.test(null, null, -1);
    }
    return program.test(node.getValue(), node.getMetadata(), 0);
  }

  private static final LiteralCache<Node> PROGRAMS =
      new LiteralCache<>("matches: the steps", StepCompiler::compile);

  /** The compiled form of {@code steps}, once per distinct text ({@link LiteralCache}). */
  static Node compiled(UTF8String steps) {
    return PROGRAMS.get(steps);
  }
}
