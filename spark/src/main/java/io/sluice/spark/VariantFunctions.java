package io.sluice.spark;

import java.util.Locale;
import org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException;
import org.apache.spark.sql.connector.catalog.FunctionCatalog;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Parses, reads and writes VARIANT values faster than Spark's built-in functions do.
 *
 * <p>Spark's {@code variant_get(v, path, type)} builds and evaluates a {@code Cast} expression for
 * every value it reads, and {@code variant_get(v, path, 'variant')} rebuilds the value's metadata:
 * reading three fields of a 500-byte event costs about as much as parsing it. These functions read
 * the VARIANT binary encoding directly (a value's header byte, an object's field ids against the
 * metadata's key bytes: {@code io.sluice.spark.variant}), from generated code: each is a Spark
 * {@link ScalarFunction} with a static "magic" {@code invoke} method, which Spark calls through
 * {@code StaticInvoke} inside whole-stage code generation.
 *
 * <p>This class is a {@link FunctionCatalog}: with {@code
 * spark.sql.catalog.sluice_fn=io.sluice.spark.VariantFunctions} the functions are called as {@code
 * sluice_fn.variant.<name>(...)} (any namespace resolves to the same functions):
 *
 * <ul>
 *   <li>{@code field(v VARIANT, key STRING) -> VARIANT}: {@link FieldFunction}
 *   <li>{@code text(v VARIANT) -> STRING}: {@link TextFunction}
 *   <li>{@code number(v VARIANT) -> DOUBLE}: {@link NumberFunction}
 *   <li>{@code parse(text STRING, allowDuplicateKeys BOOLEAN, validateUnicode BOOLEAN) -> VARIANT}:
 *       {@link ParseFunction}
 *   <li>{@code parse_pruned(text STRING, paths STRING, allowDuplicateKeys BOOLEAN, validateUnicode
 *       BOOLEAN) -> VARIANT}: {@link PrunedParseFunction}
 *   <li>{@code json_valid(text STRING, allowDuplicateKeys BOOLEAN, validateUnicode BOOLEAN) ->
 *       BOOLEAN}: {@link JsonValidFunction}
 *   <li>{@code json(v VARIANT, zone STRING) -> STRING}: {@link JsonFunction}
 *   <li>{@code kind(v VARIANT) -> STRING}: {@link KindFunction}
 *   <li>{@code envelope(data VARIANT, zone STRING, datacontenttype, dataschema, id, source,
 *       specversion, subject, time, type STRING) -> STRING}: {@link EnvelopeFunction}
 *   <li>{@code event(data VARIANT, zone STRING, extensions MAP<STRING, VARIANT>, datacontenttype,
 *       dataschema, id, source, specversion, subject, time, type STRING) -> STRING}: {@link
 *       EventFunction}
 *   <li>{@code matches(node VARIANT, steps STRING) -> BOOLEAN}: {@link MatchesFunction}
 *   <li>{@code time(ts TIMESTAMP) -> STRING}: {@link TimeFunction}
 *   <li>{@code route(node VARIANT, routes STRING) -> ARRAY<INT>}: {@link RouteFunction}
 *   <li>{@code protobuf_decode(value BINARY, plan STRING) -> VARIANT}: {@link
 *       ProtobufDecodeFunction}
 *   <li>{@code protobuf_encode(data VARIANT, plan STRING) -> BINARY}: {@link
 *       ProtobufEncodeFunction}
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
      Identifier.of(namespace, "parse_pruned"),
      Identifier.of(namespace, "json_valid"),
      Identifier.of(namespace, "json"),
      Identifier.of(namespace, "kind"),
      Identifier.of(namespace, "envelope"),
      Identifier.of(namespace, "event"),
      Identifier.of(namespace, "matches"),
      Identifier.of(namespace, "time"),
      Identifier.of(namespace, "route"),
      Identifier.of(namespace, "protobuf_decode"),
      Identifier.of(namespace, "protobuf_encode")
    };
  }

  @Override
  public UnboundFunction loadFunction(Identifier ident) throws NoSuchFunctionException {
    switch (ident.name().toLowerCase(Locale.ROOT)) {
      case "field":
        return new FieldFunction();
      case "text":
        return new TextFunction();
      case "number":
        return new NumberFunction();
      case "parse":
        return new ParseFunction();
      case "parse_pruned":
        return new PrunedParseFunction();
      case "json_valid":
        return new JsonValidFunction();
      case "json":
        return new JsonFunction();
      case "kind":
        return new KindFunction();
      case "envelope":
        return new EnvelopeFunction();
      case "event":
        return new EventFunction();
      case "matches":
        return new MatchesFunction();
      case "time":
        return new TimeFunction();
      case "route":
        return new RouteFunction();
      case "protobuf_decode":
        return new ProtobufDecodeFunction();
      case "protobuf_encode":
        return new ProtobufEncodeFunction();
      default:
        throw new NoSuchFunctionException(ident);
    }
  }
}
