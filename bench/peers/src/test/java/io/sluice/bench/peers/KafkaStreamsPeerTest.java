package io.sluice.bench.peers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.Test;

class KafkaStreamsPeerTest {
  private static final String SELECTED =
      "{\"amount\":150,\"region\":\"eu-central-1\",\"status\":\"placed\"}";
  private static final String OTHER =
      "{\"amount\":150,\"region\":\"ap-south-1\",\"status\":\"placed\"}";

  @Test
  void writesSelectedEventsAsCloudEventsStampedWhenWritten() throws Exception {
    PeerOptions options =
        PeerOptions.parse(List.of("--bootstrap", "unused:9092", "--source", "in", "--sink", "out"));
    Path state = Files.createTempDirectory("kstreams-peer-test-");
    try (TopologyTestDriver driver =
        new TopologyTestDriver(
            KafkaStreamsPeer.topology(options), KafkaStreamsPeer.properties(options, state))) {
      TestInputTopic<byte[], byte[]> in =
          driver.createInputTopic("in", new ByteArraySerializer(), new ByteArraySerializer());
      TestOutputTopic<byte[], byte[]> out =
          driver.createOutputTopic("out", new ByteArrayDeserializer(), new ByteArrayDeserializer());
      long produced = 1_000_000L; // long before now: the output must not carry it
      in.pipeInput(null, OTHER.getBytes(StandardCharsets.UTF_8), produced);
      long before = System.currentTimeMillis();
      in.pipeInput(null, SELECTED.getBytes(StandardCharsets.UTF_8), produced);

      List<TestRecord<byte[], byte[]>> records = out.readRecordsToList();
      assertEquals(1, records.size());
      TestRecord<byte[], byte[]> record = records.get(0);
      assertEquals("in/0/1", new String(record.key(), StandardCharsets.UTF_8));
      assertEquals(
          "{\"specversion\":\"1.0\",\"id\":\"in/0/1\",\"source\":\"kafka://in\","
              + "\"type\":\"sluice.kafka.record\",\"time\":\"1970-01-01T00:16:40.000Z\","
              + "\"datacontenttype\":\"application/json\",\"data\":"
              + SELECTED
              + "}",
          new String(record.value(), StandardCharsets.UTF_8));
      assertTrue(record.timestamp() >= before, "stamped when written, not when produced");
    }
  }
}
