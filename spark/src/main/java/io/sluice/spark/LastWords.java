package io.sluice.spark;

import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;

/**
 * Names the connector whose task brought a driver's JVM down, in the driver's log.
 *
 * <p>A task that dies of an error Spark deems fatal ({@code OutOfMemoryError}, {@code
 * StackOverflowError}) makes Spark's uncaught-exception handler exit the JVM, and with it every
 * connector a shared driver hosts. Registered as a listener ({@code
 * spark.extraListeners=io.sluice.spark.LastWords}), this class remembers the scheduler pool of each
 * stage (a hosted connector's jobs run in the pool named after it) and, in a shutdown hook, finds
 * the task thread that is calling {@code System.exit} from the handler and writes one line to
 * standard error:
 *
 * <pre>
 * sluice-last-words connector=&lt;pool&gt; stage=3 tid=17 thread=Executor task launch worker ...
 * </pre>
 *
 * The runtime worker reads it from the driver's log ({@code runtime_adapter.host.worker}): the
 * connector is failed with the cause, its neighbours placed again at once. Nothing is written when
 * the JVM exits for another reason.
 *
 * <p>Listener events arrive late (Spark's listener bus is asynchronous), and the failed stage is
 * reported completed before the JVM exits: the pools of the last {@link #MAX_STAGES} stages are
 * kept whether they ended or not, and the hook waits up to {@link #WAIT_MILLIS} for the dying
 * task's stage to be heard of (Spark's own shutdown hook drains the bus as it stops the
 * SparkContext).
 */
public final class LastWords extends SparkListener {
  static final String MARK = "sluice-last-words";
  static final int MAX_STAGES = 10_000;
  static final long WAIT_MILLIS = 3_000;
  private static final String HANDLER = "org.apache.spark.util.SparkUncaughtExceptionHandler";
  private static final Pattern TASK = Pattern.compile("in stage (\\d+)\\.\\d+ \\(TID (\\d+)\\)");

  private final ConcurrentSkipListMap<Integer, String> poolOfStage = new ConcurrentSkipListMap<>();

  public LastWords() {
    Runtime.getRuntime().addShutdownHook(new Thread(this::speak, "sluice-last-words"));
  }

  @Override
  public void onStageSubmitted(SparkListenerStageSubmitted submitted) {
    Properties properties = submitted.properties();
    String pool = properties == null ? null : properties.getProperty("spark.scheduler.pool");
    if (pool != null) {
      remember(submitted.stageInfo().stageId(), pool);
    }
  }

  void remember(int stage, String pool) {
    poolOfStage.put(stage, pool);
    while (poolOfStage.size() > MAX_STAGES) {
      poolOfStage.pollFirstEntry(); // stage ids grow: the oldest go first
    }
  }

  /** The line for each task thread in the uncaught-exception handler (none: exits quietly). */
  void speak() {
    for (Map.Entry<Thread, StackTraceElement[]> entry : Thread.getAllStackTraces().entrySet()) {
      if (inHandler(entry.getValue())) {
        System.err.println(words(entry.getKey().getName()));
        System.err.flush();
      }
    }
  }

  String words(String threadName) {
    return words(threadName, WAIT_MILLIS);
  }

  String words(String threadName, long waitMillis) {
    Matcher task = TASK.matcher(threadName);
    StringBuilder line = new StringBuilder(MARK);
    if (task.find()) {
      int stage = Integer.parseInt(task.group(1));
      String pool = poolOf(stage, waitMillis);
      if (pool != null) {
        line.append(" connector=").append(pool);
      }
      line.append(" stage=").append(stage).append(" tid=").append(task.group(2));
    }
    return line.append(" thread=").append(threadName.replaceAll("[\\r\\n]", " ")).toString();
  }

  /** The stage's pool, waited for a little when its submission has not been heard of yet. */
  String poolOf(int stage, long waitMillis) {
    long deadline = System.nanoTime() + waitMillis * 1_000_000L;
    String pool = poolOfStage.get(stage);
    while (pool == null && System.nanoTime() < deadline) {
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      pool = poolOfStage.get(stage);
    }
    return pool;
  }

  static boolean inHandler(StackTraceElement[] stack) {
    for (StackTraceElement frame : stack) {
      if (HANDLER.equals(frame.getClassName())) {
        return true;
      }
    }
    return false;
  }
}
