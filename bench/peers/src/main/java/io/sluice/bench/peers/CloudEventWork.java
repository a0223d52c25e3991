package io.sluice.bench.peers;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;

/**
 * The bench channel's work on one Kafka record, shared by both peers: parse the value into a
 * Jackson tree (no schema), keep it when {@link BenchPattern} matches, and write it as the
 * structured CloudEvent Sluice's Kafka sink writes ({@code bench/spark_job.py} {@code
 * plain_records}): {@code specversion}, {@code id} ({@code topic/partition/offset}, also the record
 * key), {@code source} ({@code kafka://topic}), {@code type}, {@code time} (the record's timestamp,
 * ISO-8601 UTC with milliseconds), {@code datacontenttype} and {@code data} (the event).
 *
 * <p>Not thread-safe (it reuses one output buffer): each Flink subtask and each Kafka Streams
 * processor holds its own.
 */
public final class CloudEventWork implements Serializable {
  private static final long serialVersionUID = 1L;

  static final String TYPE = "sluice.kafka.record";
  static final String CONTENT_TYPE = "application/json";
  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSXXX").withZone(ZoneOffset.UTC);

  /** A record for the sink: its key and its value, both UTF-8 JSON text bytes. */
  public record Output(byte[] key, byte[] value) {}

  private transient ObjectMapper mapper;
  private transient ByteArrayOutputStream buffer;

  private ObjectMapper mapper() {
    if (mapper == null) { // transient: a Flink subtask gets a deserialized copy without one
      mapper = new ObjectMapper();
      buffer = new ByteArrayOutputStream(1024);
    }
    return mapper;
  }

  /**
   * The CloudEvent of a selected record, or {@code null} when the pattern does not select it or its
   * value is not a JSON object (such a record is dropped, as a filter drops what it cannot read).
   */
  public Output apply(String topic, int partition, long offset, long timestampMs, byte[] value) {
    JsonNode event = parse(value);
    if (event == null || !BenchPattern.matches(event)) {
      return null;
    }
    String id = topic + "/" + partition + "/" + offset;
    return new Output(id.getBytes(StandardCharsets.UTF_8), write(id, topic, timestampMs, event));
  }

  private JsonNode parse(byte[] value) {
    if (value == null) {
      return null;
    }
    try {
      JsonNode tree = mapper().readTree(value);
      return tree instanceof ObjectNode ? tree : null;
    } catch (IOException e) {
      return null;
    }
  }

  private byte[] write(String id, String topic, long timestampMs, JsonNode event) {
    ObjectMapper json = mapper();
    buffer.reset();
    try (JsonGenerator out = json.getFactory().createGenerator(buffer, JsonEncoding.UTF8)) {
      out.writeStartObject();
      out.writeStringField("specversion", "1.0");
      out.writeStringField("id", id);
      out.writeStringField("source", "kafka://" + topic);
      out.writeStringField("type", TYPE);
      out.writeStringField("time", TIME.format(Instant.ofEpochMilli(timestampMs)));
      out.writeStringField("datacontenttype", CONTENT_TYPE);
      out.writeFieldName("data");
      json.writeTree(out, event);
      out.writeEndObject();
    } catch (IOException e) { // a ByteArrayOutputStream does not fail
      throw new UncheckedIOException(e);
    }
    return buffer.toByteArray();
  }
}
