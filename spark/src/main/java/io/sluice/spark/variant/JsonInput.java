package io.sluice.spark.variant;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.util.JsonRecyclerPools;
import org.apache.spark.unsafe.types.UTF8String;

/** What {@code parse} reads JSON text with: one shared factory, the text's bytes in place. */
public final class JsonInput {
  /**
   * Thread-safe once configured; Spark's parse_json uses a default one per document. Its buffers
   * come from a shared deque rather than a thread-local (an executor thread's crowded
   * ThreadLocalMap made each lookup a slow miss).
   */
  public static final JsonFactory FACTORY =
      JsonFactory.builder().recyclerPool(JsonRecyclerPools.newConcurrentDequePool()).build();

  private JsonInput() {}

  /**
   * The bytes of {@code text} when Jackson's byte parser reads exactly the characters Spark's
   * parse_json reads (it decodes the text to a String): valid UTF-8 (a String replaces malformed
   * bytes), no byte-order mark (the byte parser skips it, the String parser refuses it) and no NUL
   * in the first four bytes (the byte parser would take UTF-16 or UTF-32). Else null: the text is
   * decoded as Spark does.
   */
  public static byte[] utf8Bytes(UTF8String text) {
    int n = text.numBytes();
    byte[] bytes = text.getBytes(); // the backing array itself when it holds just the text
    if (!Utf8.isValid(bytes, n)) {
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
}
