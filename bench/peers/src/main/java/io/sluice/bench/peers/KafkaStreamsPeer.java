package io.sluice.bench.peers;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;

/**
 * The bench channel's work in Kafka Streams 4.3.1: source topic -> one processor (parse, match,
 * CloudEvent) -> sink topic, with 2 stream threads (one a partition).
 *
 * <p>Settings: a new {@code application.id} every run (so the group starts at the earliest offset),
 * at-least-once with Kafka Streams' default 30 s commit interval, or {@code --exactly-once} for
 * exactly-once v2 (transactions, committed every 100 ms by default); the producer as Sluice's Kafka
 * sink sets it (linger 5 ms, 256 KiB batches; Kafka Streams' own default linger is 100 ms).
 */
public final class KafkaStreamsPeer {
  private KafkaStreamsPeer() {}

  public static void main(String[] args) throws Exception {
    PeerOptions options = PeerOptions.parse(List.of(args));
    Path stateDir = Files.createTempDirectory("sluice-bench-kstreams-");
    KafkaStreams streams = new KafkaStreams(topology(options), properties(options, stateDir));
    CountDownLatch running = new CountDownLatch(1);
    streams.setStateListener(
        (now, before) -> {
          if (now == KafkaStreams.State.RUNNING) {
            running.countDown();
          }
        });
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  streams.close(Duration.ofSeconds(30));
                  ScratchDir.delete(stateDir);
                }));
    streams.start();
    if (!options.timed()) {
      return; // the stream threads run on until SIGTERM (the shutdown hook closes them)
    }
    if (!running.await(120, TimeUnit.SECONDS)) {
      throw new IllegalStateException("Kafka Streams did not reach RUNNING in 120 s");
    }
    PeerOptions.announceReady();
    Thread.sleep((long) (options.seconds() * 1000));
    System.exit(0); // the shutdown hook closes the streams
  }

  /** Source -> {@link CloudEventProcessor} -> sink, bytes in and out. */
  static Topology topology(PeerOptions options) {
    StreamsBuilder builder = new StreamsBuilder();
    builder.stream(options.source(), Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
        .process(CloudEventProcessor::new)
        .to(options.sink(), Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));
    return builder.build();
  }

  static Properties properties(PeerOptions options, Path stateDir) {
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, "sluice-bench-" + UUID.randomUUID());
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, options.bootstrap());
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, PeerOptions.WORKERS);
    props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
    props.put(
        StreamsConfig.PROCESSING_GUARANTEE_CONFIG,
        options.exactlyOnce() ? StreamsConfig.EXACTLY_ONCE_V2 : StreamsConfig.AT_LEAST_ONCE);
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    props.put(StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), PeerOptions.LINGER_MS);
    props.put(
        StreamsConfig.producerPrefix(ProducerConfig.BATCH_SIZE_CONFIG), PeerOptions.BATCH_SIZE);
    return props;
  }

  /**
   * Reads each record's topic, partition and offset from its metadata and forwards the CloudEvent
   * of a selected one, stamped with the time it is written: Kafka Streams would otherwise give the
   * output the input record's timestamp, and the bench's latency is the sink timestamp minus the
   * produce time.
   */
  static final class CloudEventProcessor implements Processor<byte[], byte[], byte[], byte[]> {
    private final CloudEventWork work = new CloudEventWork();
    private ProcessorContext<byte[], byte[]> context;

    @Override
    public void init(ProcessorContext<byte[], byte[]> context) {
      this.context = context;
    }

    @Override
    public void process(Record<byte[], byte[]> record) {
      RecordMetadata meta = context.recordMetadata().orElseThrow();
      CloudEventWork.Output out =
          work.apply(
              meta.topic(), meta.partition(), meta.offset(), record.timestamp(), record.value());
      if (out != null) {
        context.forward(new Record<>(out.key(), out.value(), System.currentTimeMillis()));
      }
    }
  }
}
