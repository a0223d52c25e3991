package io.sluice.bench.peers;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * The bench channel's work in Flink 2.2.1's DataStream API, in a local mini-cluster inside this JVM
 * with parallelism 2 (one subtask a partition): KafkaSource -> one flatMap (parse, match,
 * CloudEvent) -> KafkaSink, chained in one task.
 *
 * <p>Settings: a new consumer group every run, starting at the earliest offset; object reuse on
 * (the chained operators hand records on without copying them, a usual Flink tuning); the producer
 * as Sluice's Kafka sink sets it (linger 5 ms, 256 KiB batches). No checkpoints by default - the
 * least durable work, nothing is ever committed - or with {@code --checkpoint-seconds N} a
 * checkpoint every N seconds to a file-system checkpoint directory with an at-least-once sink (the
 * producer is flushed at each checkpoint), as a durable job runs.
 */
public final class FlinkPeer {
  private FlinkPeer() {}

  public static void main(String[] args) throws Exception {
    PeerOptions options = PeerOptions.parse(List.of(args));
    StreamExecutionEnvironment env =
        StreamExecutionEnvironment.createLocalEnvironment(PeerOptions.WORKERS, settings(options));
    env.fromSource(source(options), WatermarkStrategy.noWatermarks(), "kafka source")
        .flatMap(new CloudEventFunction())
        .name("parse, match, CloudEvent")
        .sinkTo(sink(options))
        .name("kafka sink");
    JobClient job = env.executeAsync("sluice-bench-flink");
    if (!options.timed()) {
      job.getJobExecutionResult().get(); // runs until SIGTERM
      return;
    }
    awaitRunning(job);
    PeerOptions.announceReady();
    Thread.sleep((long) (options.seconds() * 1000));
    job.cancel().get(60, TimeUnit.SECONDS);
    System.exit(0);
  }

  static Configuration settings(PeerOptions options) throws java.io.IOException {
    Configuration conf = new Configuration();
    conf.set(PipelineOptions.OBJECT_REUSE, true);
    if (options.checkpointSeconds() > 0) {
      Path dir = ScratchDir.create("sluice-bench-flink-checkpoints-");
      conf.set(
          CheckpointingOptions.CHECKPOINTING_INTERVAL,
          Duration.ofSeconds(options.checkpointSeconds()));
      conf.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
      conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, dir.toUri().toString());
    }
    return conf;
  }

  static KafkaSource<KafkaEvent> source(PeerOptions options) {
    return KafkaSource.<KafkaEvent>builder()
        .setBootstrapServers(options.bootstrap())
        .setTopics(options.source())
        .setGroupId("sluice-bench-" + UUID.randomUUID())
        .setStartingOffsets(OffsetsInitializer.earliest())
        .setDeserializer(new RecordReader())
        .build();
  }

  static KafkaSink<CloudEventWork.Output> sink(PeerOptions options) {
    return KafkaSink.<CloudEventWork.Output>builder()
        .setBootstrapServers(options.bootstrap())
        .setRecordSerializer(new RecordWriter(options.sink()))
        .setDeliveryGuarantee(
            options.checkpointSeconds() > 0
                ? DeliveryGuarantee.AT_LEAST_ONCE
                : DeliveryGuarantee.NONE)
        .setProperty(ProducerConfig.LINGER_MS_CONFIG, PeerOptions.LINGER_MS)
        .setProperty(ProducerConfig.BATCH_SIZE_CONFIG, PeerOptions.BATCH_SIZE)
        .build();
  }

  private static void awaitRunning(JobClient job) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (job.getJobStatus().get() != JobStatus.RUNNING) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("the Flink job did not reach RUNNING in 120 s");
      }
      Thread.sleep(50);
    }
  }

  /** Kafka record -> {@link KafkaEvent}: the value stays bytes until the flatMap. */
  static final class RecordReader implements KafkaRecordDeserializationSchema<KafkaEvent> {
    private static final long serialVersionUID = 1L;

    @Override
    public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<KafkaEvent> out) {
      out.collect(
          new KafkaEvent(
              record.topic(),
              record.partition(),
              record.offset(),
              record.timestamp(),
              record.value()));
    }

    @Override
    public TypeInformation<KafkaEvent> getProducedType() {
      return TypeInformation.of(KafkaEvent.class);
    }
  }

  /** The bench channel's work on each record ({@link CloudEventWork}). */
  static final class CloudEventFunction
      implements FlatMapFunction<KafkaEvent, CloudEventWork.Output> {
    private static final long serialVersionUID = 1L;
    private final CloudEventWork work = new CloudEventWork();

    @Override
    public void flatMap(KafkaEvent event, Collector<CloudEventWork.Output> out) {
      CloudEventWork.Output cloudEvent =
          work.apply(event.topic, event.partition, event.offset, event.timestamp, event.value);
      if (cloudEvent != null) {
        out.collect(cloudEvent);
      }
    }
  }

  /**
   * The sink record: key {@code topic/partition/offset}, the CloudEvent, and the time it is written
   * as its timestamp - Flink's sink would otherwise carry the input record's timestamp, and the
   * bench's latency is the sink timestamp minus the produce time.
   */
  static final class RecordWriter implements KafkaRecordSerializationSchema<CloudEventWork.Output> {
    private static final long serialVersionUID = 1L;
    private final String topic;

    RecordWriter(String topic) {
      this.topic = topic;
    }

    @Override
    public ProducerRecord<byte[], byte[]> serialize(
        CloudEventWork.Output event, KafkaSinkContext context, Long timestamp) {
      return new ProducerRecord<>(
          topic, null, System.currentTimeMillis(), event.key(), event.value());
    }
  }
}
