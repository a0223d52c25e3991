package io.sluice.bench.peers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class CloudEventWorkTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** An event as bench/workload.py make_event() writes it (note shortened). */
  private static final String EVENT =
      "{\"seq\":7,\"produced_at_ms\":1764511423123,\"amount\":120.5,\"region\":\"eu-west-1\","
          + "\"status\":\"paid\",\"customer\":\"customer-000042\",\"note\":\"xx\"}";

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  private static boolean matches(String event) throws Exception {
    return BenchPattern.matches(JSON.readTree(event));
  }

  @Test
  void writesTheCloudEventSluicesSinkWrites() {
    CloudEventWork.Output out =
        new CloudEventWork().apply("bench-in", 1, 42, 1764511423123L, bytes(EVENT));
    assertNotNull(out);
    assertEquals("bench-in/1/42", new String(out.key(), StandardCharsets.UTF_8));
    assertEquals(
        "{\"specversion\":\"1.0\",\"id\":\"bench-in/1/42\",\"source\":\"kafka://bench-in\","
            + "\"type\":\"sluice.kafka.record\",\"time\":\"2025-11-30T14:03:43.123Z\","
            + "\"datacontenttype\":\"application/json\",\"data\":"
            + EVENT
            + "}",
        new String(out.value(), StandardCharsets.UTF_8));
  }

  @Test
  void theBufferIsNotSharedBetweenOutputs() {
    CloudEventWork work = new CloudEventWork();
    CloudEventWork.Output first = work.apply("t", 0, 1, 0, bytes(EVENT));
    String before = new String(first.value(), StandardCharsets.UTF_8);
    work.apply("t", 0, 2, 0, bytes(EVENT.replace("120.5", "300")));
    assertEquals(before, new String(first.value(), StandardCharsets.UTF_8));
  }

  @Test
  void dropsWhatThePatternDoesNotSelectAndWhatIsNotAnObject() {
    CloudEventWork work = new CloudEventWork();
    assertNull(work.apply("t", 0, 0, 0, bytes(EVENT.replace("eu-west-1", "us-east-1"))));
    assertNull(work.apply("t", 0, 0, 0, bytes("not json")));
    assertNull(work.apply("t", 0, 0, 0, bytes("[1, 2]")));
    assertNull(work.apply("t", 0, 0, 0, null));
  }

  @Test
  void thePatternIsTheBenchmarks() throws Exception {
    assertTrue(matches(EVENT));
    assertFalse(matches(EVENT.replace("120.5", "100"))); // amount > 100, not >=
    assertFalse(matches(EVENT.replace("120.5", "\"120.5\""))); // numeric only
    assertFalse(matches(EVENT.replace("eu-west-1", "us-east-1")));
    assertFalse(matches(EVENT.replace("eu-west-1", "EU-west-1"))); // prefix is case-sensitive
    assertFalse(matches(EVENT.replace("paid", "cancelled")));
    assertFalse(matches(EVENT.replace("paid", "test")));
    assertTrue(matches(EVENT.replace("paid", "shipped")));
    assertFalse(matches(EVENT.replace("\"status\":\"paid\",", ""))); // anything-but needs it
  }

  @Test
  void optionsNeedTheTopicsAndTakeTheFairnessSwitches() {
    PeerOptions plain =
        PeerOptions.parse(List.of("--bootstrap", "b:1", "--source", "s", "--sink", "o"));
    assertFalse(plain.timed());
    assertEquals(0, plain.checkpointSeconds());
    PeerOptions timed =
        PeerOptions.parse(
            List.of(
                "--bootstrap",
                "b:1",
                "--source",
                "s",
                "--sink",
                "o",
                "--seconds",
                "2.5",
                "--checkpoint-seconds",
                "10",
                "--exactly-once"));
    assertTrue(timed.timed());
    assertEquals(10, timed.checkpointSeconds());
    assertTrue(timed.exactlyOnce());
    assertThrows(IllegalArgumentException.class, () -> PeerOptions.parse(List.of("--source", "s")));
    assertThrows(
        IllegalArgumentException.class,
        () -> PeerOptions.parse(List.of("--bootstrap", "b", "--source", "s", "--sink", "o", "-x")));
    assertThrows(
        IllegalArgumentException.class,
        () ->
            PeerOptions.parse(
                List.of("--bootstrap", "b", "--source", "s", "--sink", "o", "--seconds", "0")));
  }
}
