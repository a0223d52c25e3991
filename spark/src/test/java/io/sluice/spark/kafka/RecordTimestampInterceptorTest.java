package io.sluice.spark.kafka;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

class RecordTimestampInterceptorTest {
  private final RecordTimestampInterceptor interceptor = new RecordTimestampInterceptor();

  private static byte[] b(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  private static ProducerRecord<byte[], byte[]> record(String... headers) {
    RecordHeaders all = new RecordHeaders();
    for (int i = 0; i < headers.length; i += 2) {
      all.add(new RecordHeader(headers[i], b(headers[i + 1])));
    }
    return new ProducerRecord<>("t", null, null, b("k"), b("{}"), all);
  }

  @Test
  void givesTheRecordItsTimestampAndDropsTheHeader() {
    ProducerRecord<byte[], byte[]> sent =
        interceptor.onSend(
            record("trace", "1", RecordTimestampInterceptor.HEADER, "1796059124069", "b", "2"));
    assertEquals(1796059124069L, sent.timestamp());
    assertEquals("t", sent.topic());
    assertNull(sent.partition());
    assertArrayEquals(b("k"), sent.key());
    assertArrayEquals(b("{}"), sent.value());
    List<String> names =
        java.util.Arrays.stream(sent.headers().toArray()).map(h -> h.key()).toList();
    assertEquals(List.of("trace", "b"), names); // the others kept, in their order
  }

  @Test
  void aRecordWithoutTheHeaderIsSentAsItIs() {
    ProducerRecord<byte[], byte[]> plain = record("trace", "1");
    assertSame(plain, interceptor.onSend(plain));
  }

  @Test
  void aTimestampKafkaRefusesLeavesTheProducersClock() {
    for (String bad : new String[] {"-1", "", "12a", "1234567890123456789"}) {
      ProducerRecord<byte[], byte[]> sent =
          interceptor.onSend(record(RecordTimestampInterceptor.HEADER, bad));
      assertNull(sent.timestamp(), bad);
      assertEquals(0, sent.headers().toArray().length, bad);
    }
  }

  @Test
  void readsWhatTheSinkWrites() {
    for (long millis : new long[] {0L, 1L, 1796059124069L, Long.MAX_VALUE / 1000}) {
      assertEquals(
          millis, RecordTimestampInterceptor.millis(RecordTimestampInterceptor.header(millis)));
    }
  }
}
