package io.sluice.bench.peers;

/**
 * A Kafka record as the Flink peer's source hands it on: where it was read and its value, still
 * bytes (a Flink POJO: public fields and a no-argument constructor).
 */
public class KafkaEvent {
  public String topic;
  public int partition;
  public long offset;
  public long timestamp;
  public byte[] value;

  public KafkaEvent() {}

  public KafkaEvent(String topic, int partition, long offset, long timestamp, byte[] value) {
    this.topic = topic;
    this.partition = partition;
    this.offset = offset;
    this.timestamp = timestamp;
    this.value = value;
  }
}
