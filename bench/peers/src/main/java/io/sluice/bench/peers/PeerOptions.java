package io.sluice.bench.peers;

import java.util.List;

/**
 * The command line both peers share: {@code --bootstrap B --source T --sink T} and, for the latency
 * runs, {@code --seconds S}; plus each peer's fairness switch ({@code --checkpoint-seconds N} for
 * Flink, {@code --exactly-once} for Kafka Streams).
 *
 * <p>Without {@code --seconds} a peer drains the backlog and keeps running until it is stopped
 * (SIGTERM): the bench times it from outside. With it, it prints {@code {"ready": true}} once the
 * job consumes, runs that many seconds and exits 0.
 */
public record PeerOptions(
    String bootstrap,
    String source,
    String sink,
    double seconds,
    int checkpointSeconds,
    boolean exactlyOnce) {

  /** Workers of each peer: Flink's parallelism, Kafka Streams' stream threads (one a partition). */
  public static final int WORKERS = 2;

  /** Producer settings of Sluice's Kafka sink ({@code pipelines/kafka_options.py}). */
  public static final String LINGER_MS = "5";

  public static final String BATCH_SIZE = "262144";

  /** Parses {@code args}; throws {@link IllegalArgumentException} with a usage line if wrong. */
  public static PeerOptions parse(List<String> args) {
    String bootstrap = null;
    String source = null;
    String sink = null;
    double seconds = 0;
    int checkpointSeconds = 0;
    boolean exactlyOnce = false;
    for (int i = 0; i < args.size(); i++) {
      String name = args.get(i);
      switch (name) {
        case "--bootstrap" -> bootstrap = value(args, ++i, name);
        case "--source" -> source = value(args, ++i, name);
        case "--sink" -> sink = value(args, ++i, name);
        case "--seconds" -> seconds = positive(Double.parseDouble(value(args, ++i, name)), name);
        case "--checkpoint-seconds" ->
            checkpointSeconds = (int) positive(Integer.parseInt(value(args, ++i, name)), name);
        case "--exactly-once" -> exactlyOnce = true;
        default -> throw usage("unknown argument " + name);
      }
    }
    if (bootstrap == null || source == null || sink == null) {
      throw usage("--bootstrap, --source and --sink are required");
    }
    return new PeerOptions(bootstrap, source, sink, seconds, checkpointSeconds, exactlyOnce);
  }

  /** Whether this is a latency run (fixed length) rather than a throughput run (until stopped). */
  public boolean timed() {
    return seconds > 0;
  }

  /** Tells the bench the job consumes now ({@code bench/dataplane.py} {@code latency()}). */
  public static void announceReady() {
    System.out.println("{\"ready\": true}");
    System.out.flush();
  }

  private static String value(List<String> args, int index, String name) {
    if (index >= args.size()) {
      throw usage(name + " needs a value");
    }
    return args.get(index);
  }

  private static double positive(double value, String name) {
    if (!(value > 0)) {
      throw usage(name + " must be positive");
    }
    return value;
  }

  private static IllegalArgumentException usage(String problem) {
    return new IllegalArgumentException(
        problem
            + "\nusage: --bootstrap B --source T --sink T [--seconds S]"
            + " [--checkpoint-seconds N (Flink)] [--exactly-once (Kafka Streams)]");
  }
}
