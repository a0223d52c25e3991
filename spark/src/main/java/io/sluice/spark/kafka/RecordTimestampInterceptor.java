package io.sluice.spark.kafka;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * A producer interceptor that gives each record the timestamp its {@value #HEADER} header names
 * (epoch milliseconds as decimal ASCII), then drops that header: Spark's Kafka sink writes no
 * timestamp of its own (its rows have no such column), so a channel that copies records (a
 * pass-through) carries each record's timestamp to the producer this way. Set on the producer with
 * {@code interceptor.classes}; a record without the header is sent as it is, and one whose header
 * is not a timestamp Kafka accepts (not a number, or negative: a record written without one) gets
 * the producer's clock, as without it.
 */
public final class RecordTimestampInterceptor implements ProducerInterceptor<byte[], byte[]> {
  /** The header the sink's rows carry the record's timestamp in; reserved (always dropped). */
  public static final String HEADER = "sluice.record.timestamp";

  @Override
  public ProducerRecord<byte[], byte[]> onSend(ProducerRecord<byte[], byte[]> record) {
    Headers headers = record.headers();
    Header header = headers.lastHeader(HEADER);
    if (header == null) {
      return record;
    }
    headers.remove(HEADER); // not read-only yet: the producer seals them after the interceptors
    Long timestamp = millis(header.value());
    return new ProducerRecord<>(
        record.topic(), record.partition(), timestamp, record.key(), record.value(), headers);
  }

  /** The epoch milliseconds {@code value} names, or null when it names none Kafka accepts. */
  static Long millis(byte[] value) {
    if (value == null || value.length == 0 || value.length > 18) {
      return null;
    }
    long millis = 0;
    for (byte b : value) {
      if (b < '0' || b > '9') {
        return null; // a minus sign too: Kafka refuses negative timestamps
      }
      millis = millis * 10 + (b - '0');
    }
    return millis;
  }

  /** The header's value for {@code millis}: what the sink's rows carry. */
  static byte[] header(long millis) {
    return Long.toString(millis).getBytes(StandardCharsets.US_ASCII);
  }

  @Override
  public void onAcknowledgement(RecordMetadata metadata, Exception exception) {}

  @Override
  public void close() {}

  @Override
  public void configure(Map<String, ?> configs) {}
}
