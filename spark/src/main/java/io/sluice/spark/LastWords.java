package io.sluice.spark;

import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;

/**
 * Names the connector whose task brought a driver's JVM down, in the driver's log.
 *
 * <p>A task that dies of an error Spark deems fatal ({@code OutOfMemoryError}, {@code
 * StackOverflowError}) makes Spark's uncaught-exception handler exit the JVM, and with it every
 * connector a shared driver hosts. Registered as a listener ({@code
 * spark.extraListeners=io.sluice.spark.LastWords}), this class remembers the scheduler pool of each
 * running stage (a hosted connector's jobs run in the pool named after it) and, in a shutdown hook,
 * finds the task thread that is calling {@code System.exit} from the handler and writes one line to
 * standard error:
 *
 * <pre>
 * sluice-last-words connector=&lt;pool&gt; stage=3 tid=17 thread=Executor task launch worker ...
 * </pre>
 *
 * The runtime worker reads it from the log's tail ({@code runtime_adapter.host.worker}): the
 * connector is failed with the cause, its neighbours placed again at once. Nothing is written when
 * the JVM exits for another reason.
 */
public final class LastWords extends SparkListener {
  static final String MARK = "sluice-last-words";
  private static final String HANDLER = "org.apache.spark.util.SparkUncaughtExceptionHandler";
  private static final Pattern TASK = Pattern.compile("in stage (\\d+)\\.\\d+ \\(TID (\\d+)\\)");
  private static final int MAX_STAGES = 100_000;

  private final Map<Integer, String> poolOfStage = new ConcurrentHashMap<>();

  public LastWords() {
    Runtime.getRuntime().addShutdownHook(new Thread(this::speak, "sluice-last-words"));
  }

  @Override
  public void onStageSubmitted(SparkListenerStageSubmitted submitted) {
    Properties properties = submitted.properties();
    String pool = properties == null ? null : properties.getProperty("spark.scheduler.pool");
    if (pool != null && poolOfStage.size() < MAX_STAGES) {
      poolOfStage.put(submitted.stageInfo().stageId(), pool);
    }
  }

  @Override
  public void onStageCompleted(SparkListenerStageCompleted completed) {
    poolOfStage.remove(completed.stageInfo().stageId());
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
    Matcher task = TASK.matcher(threadName);
    StringBuilder line = new StringBuilder(MARK);
    if (task.find()) {
      int stage = Integer.parseInt(task.group(1));
      String pool = poolOfStage.get(stage);
      if (pool != null) {
        line.append(" connector=").append(pool);
      }
      line.append(" stage=").append(stage).append(" tid=").append(task.group(2));
    }
    return line.append(" thread=").append(threadName.replaceAll("[\\r\\n]", " ")).toString();
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
