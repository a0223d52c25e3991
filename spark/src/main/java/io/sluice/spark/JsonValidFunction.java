package io.sluice.spark;

import io.sluice.spark.variant.JsonInput;
import io.sluice.spark.variant.JsonScan;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * {@code json_valid(text STRING, allowDuplicateKeys BOOLEAN, validateUnicode BOOLEAN) -> BOOLEAN}:
 * whether {@link ParseFunction parse} gives {@code text} a value (false where it is NULL, and for a
 * NULL text), without building one: what a channel that moves records as they are (a pass-through)
 * checks of each.
 *
 * <p>It is {@link PrunedParseFunction parse_pruned} keeping no member, which is NULL exactly when
 * {@code parse} is (its random differential test covers the empty path list): a document that
 * {@link JsonScan} decides (ASCII, no escapes) is scanned and nothing is built; any other is read
 * by the pruned parse, which builds an empty object.
 */
public final class JsonValidFunction extends SimpleFunction<Boolean> {
  private static final long serialVersionUID = 1L;

  private static final UTF8String NO_PATHS = UTF8String.fromString("[]");

  public JsonValidFunction() {
    super(
        "json_valid", DataTypes.BooleanType, STRING, DataTypes.BooleanType, DataTypes.BooleanType);
  }

  /** Spark passes a NULL argument as a Java null (no null propagation): not valid. */
  public static boolean invoke(
      UTF8String text, boolean allowDuplicateKeys, boolean validateUnicode) {
    if (text == null) {
      return false;
    }
    byte[] bytes = JsonInput.utf8Bytes(text);
    if (bytes != null
        && bytes.length <= PrunedParseFunction.WHOLE_ABOVE_BYTES
        && PrunedParseFunction.plainAscii(bytes)) {
      int[] members = JsonScan.topMembers(bytes, !allowDuplicateKeys);
      if (members != JsonScan.UNSURE) {
        return members != JsonScan.INVALID;
      }
    }
    return PrunedParseFunction.invoke(text, NO_PATHS, allowDuplicateKeys, validateUnicode) != null;
  }
}
