package io.sluice.bench.peers;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The benchmark's event pattern ({@code bench/workload.py} PATTERN) written by hand, as a Flink or
 * Kafka Streams user would: {@code amount > 100}, {@code region} starting with {@code eu-}, {@code
 * status} neither {@code cancelled} nor {@code test}. The events are flat JSON: the pattern's
 * {@code data} is the event itself.
 *
 * <p>As in an event pattern, a field that is missing or of another type does not match: a
 * non-numeric amount, a region that is not a string, an absent status.
 */
public final class BenchPattern {
  private BenchPattern() {}

  /** Whether {@code event} (the parsed record value) is one the bench channel selects. */
  public static boolean matches(JsonNode event) {
    JsonNode amount = event.get("amount");
    if (amount == null || !amount.isNumber() || !(amount.doubleValue() > 100)) {
      return false;
    }
    JsonNode region = event.get("region");
    if (region == null || !region.isTextual() || !region.textValue().startsWith("eu-")) {
      return false;
    }
    JsonNode status = event.get("status");
    if (status == null) {
      return false;
    }
    if (!status.isTextual()) {
      return true;
    }
    String text = status.textValue();
    return !text.equals("cancelled") && !text.equals("test");
  }
}
