package io.sluice.spark;

import com.sun.management.GarbageCollectionNotificationInfo;
import java.io.IOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.ToLongFunction;
import javax.management.ListenerNotFoundException;
import javax.management.Notification;
import javax.management.NotificationEmitter;
import javax.management.NotificationListener;
import javax.management.openmbean.CompositeData;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.TaskContext;
import org.apache.spark.TaskFailedReason;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * Stops the connector that drives a JVM's memory past a limit, not the JVM.
 *
 * <p>Registered as a Spark plugin ({@code spark.plugins=io.sluice.spark.MemoryWatch}), its executor
 * side runs in every JVM that runs tasks (a local-mode driver's too). It watches two figures:
 *
 * <ul>
 *   <li>the heap in use after each garbage collection, against {@code heapFraction} of the maximum
 *       heap: over it after a full collection, or after {@code consecutive} collections in a row;
 *   <li>the process's resident memory ({@code VmRSS}), against {@code rssMiB}, once a second (0:
 *       not watched).
 * </ul>
 *
 * <p>Over a limit, it blames the running task that has allocated the most since it started (the JVM
 * counts each thread's allocations; a hosted connector's tasks run in the scheduler pool named
 * after it, so the task names its connector), provided that task allocated at least {@code
 * minShare} of the maximum heap; else it blames no one (the memory is held elsewhere). The verdict
 * goes to the driver side, which writes one line to standard error and cancels the task's stage
 * with the reason:
 *
 * <pre>
 * sluice-memory-watch connector=&lt;pool&gt; stage=3 tid=17 reason=...
 * </pre>
 *
 * The connector's query fails with that reason; its neighbours' queries run on. No second task is
 * blamed while a blamed task still runs (its memory is not free yet). This is a heuristic: what a
 * task allocated bounds what it can hold, and an innocent task that allocated much and holds little
 * may be blamed when another holds memory it did not allocate in a running task.
 */
public final class MemoryWatch implements SparkPlugin {
  static final String MARK = "sluice-memory-watch";
  static final String CONF = "spark.sluice.memoryWatch.";
  static final String POOL = "spark.scheduler.pool";
  static final long MIB = 1024L * 1024L;
  static final long UNBLAMED_EVERY_NANOS = 60_000_000_000L;

  @Override
  public DriverPlugin driverPlugin() {
    return new Judge();
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new Watch();
  }

  /** The limits, from the application's configuration. */
  record Limits(double heapFraction, long rssBytes, double minShare, int consecutive) {
    static Limits of(SparkConf conf) {
      return new Limits(
          Math.min(Math.max(conf.getDouble(CONF + "heapFraction", 0.85), 0.1), 0.99),
          Math.max(conf.getLong(CONF + "rssMiB", 0), 0) * MIB,
          Math.min(Math.max(conf.getDouble(CONF + "minShare", 0.1), 0.0), 1.0),
          (int) Math.min(Math.max(conf.getLong(CONF + "consecutive", 3), 1), 100));
    }
  }

  /** A task running in this JVM: its thread, stage, pool and allocation count when it began. */
  record Running(long thread, long tid, int stage, String pool, long allocatedAtStart) {}

  /** A verdict sent from the executor side to the driver side (a tab-separated line). */
  record Verdict(int stage, long tid, String connector, String reason) {
    String text() {
      return stage + "\t" + tid + "\t" + clean(connector) + "\t" + clean(reason);
    }

    static Verdict parse(String text) {
      String[] parts = text.split("\t", 4);
      if (parts.length != 4) {
        return null;
      }
      try {
        return new Verdict(
            Integer.parseInt(parts[0]), Long.parseLong(parts[1]), parts[2], parts[3]);
      } catch (NumberFormatException e) {
        return null;
      }
    }

    String line() {
      return MARK
          + " connector="
          + connector
          + " stage="
          + stage
          + " tid="
          + tid
          + " reason="
          + reason;
    }

    private static String clean(String text) {
      return text.replaceAll("[\\t\\r\\n]", " ");
    }
  }

  /** When a figure counts as over its limit: a full collection, or enough in a row. */
  static final class Gauge {
    private final long limit;
    private final int consecutive;
    private int streak;

    Gauge(long limit, int consecutive) {
      this.limit = limit;
      this.consecutive = consecutive;
    }

    synchronized boolean over(long afterGc, boolean major) {
      if (afterGc <= limit) {
        streak = 0;
        return false;
      }
      streak++;
      return major || streak >= consecutive;
    }

    synchronized void reset() {
      streak = 0;
    }

    long limit() {
      return limit;
    }
  }

  /**
   * The task to blame: the one that allocated the most since it started, at least {@code minBytes};
   * {@code null} when none did.
   */
  static Running culprit(
      Collection<Running> tasks, ToLongFunction<Running> allocated, long minBytes) {
    Running worst = null;
    long most = -1;
    for (Running task : tasks) {
      long bytes = allocated.applyAsLong(task);
      if (bytes > most) {
        most = bytes;
        worst = task;
      }
    }
    return worst != null && most >= minBytes ? worst : null;
  }

  /** The resident memory in a {@code /proc/<pid>/status} text (bytes; -1 when absent). */
  static long residentBytes(String status) {
    for (String line : status.split("\n")) {
      if (line.startsWith("VmRSS:")) {
        String[] words = line.substring(6).trim().split("\\s+");
        try {
          return Long.parseLong(words[0]) * 1024L; // in kB
        } catch (NumberFormatException e) {
          return -1;
        }
      }
    }
    return -1;
  }

  /** The driver side: cancels the stage a verdict names. */
  static final class Judge implements DriverPlugin {
    private volatile SparkContext context;

    @Override
    public Map<String, String> init(SparkContext sc, PluginContext pluginContext) {
      context = sc;
      return Collections.emptyMap();
    }

    @Override
    public Object receive(Object message) {
      Verdict verdict = message instanceof String text ? Verdict.parse(text) : null;
      SparkContext sc = context;
      if (verdict != null && sc != null) {
        System.err.println(verdict.line());
        System.err.flush();
        sc.cancelStage(verdict.stage(), verdict.reason());
      }
      return null;
    }
  }

  /** The executor side: counts running tasks' allocations, watches the figures, blames. */
  static final class Watch implements ExecutorPlugin, NotificationListener {
    private final Map<Long, Running> running = new ConcurrentHashMap<>();
    private final Set<Long> blamed = ConcurrentHashMap.newKeySet();
    private final List<NotificationEmitter> emitters = new ArrayList<>();
    private final Set<String> heapPools = new HashSet<>();
    private final com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private PluginContext pluginContext;
    private Limits limits;
    private Gauge heap;
    private long maxHeap;
    private Thread rssWatch;
    private volatile boolean stopped;
    private long lastUnblamed;

    @Override
    public void init(PluginContext ctx, Map<String, String> extraConf) {
      pluginContext = ctx;
      limits = Limits.of(ctx.conf());
      maxHeap = Runtime.getRuntime().maxMemory();
      heap = new Gauge((long) (maxHeap * limits.heapFraction()), limits.consecutive());
      if (!threads.isThreadAllocatedMemorySupported()) {
        System.err.println(MARK + " off: this JVM does not count threads' allocations");
        return;
      }
      threads.setThreadAllocatedMemoryEnabled(true);
      for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
        if (pool.getType() == MemoryType.HEAP) {
          heapPools.add(pool.getName());
        }
      }
      for (GarbageCollectorMXBean collector : ManagementFactory.getGarbageCollectorMXBeans()) {
        if (collector instanceof NotificationEmitter emitter) {
          emitter.addNotificationListener(this, null, null);
          emitters.add(emitter);
        }
      }
      if (limits.rssBytes() > 0) {
        rssWatch = new Thread(this::watchResident, MARK + "-rss");
        rssWatch.setDaemon(true);
        rssWatch.start();
      }
    }

    @Override
    public void shutdown() {
      stopped = true;
      for (NotificationEmitter emitter : emitters) {
        try {
          emitter.removeNotificationListener(this);
        } catch (ListenerNotFoundException e) {
          // already gone
        }
      }
      if (rssWatch != null) {
        rssWatch.interrupt();
      }
    }

    @Override
    public void onTaskStart() {
      TaskContext task = TaskContext.get();
      if (task == null || limits == null) {
        return;
      }
      long thread = Thread.currentThread().getId();
      running.put(
          thread,
          new Running(
              thread,
              task.taskAttemptId(),
              task.stageId(),
              task.getLocalProperty(POOL),
              threads.getCurrentThreadAllocatedBytes()));
    }

    @Override
    public void onTaskSucceeded() {
      ended();
    }

    @Override
    public void onTaskFailed(TaskFailedReason reason) {
      ended();
    }

    private void ended() {
      Running task = running.remove(Thread.currentThread().getId());
      if (task != null) {
        blamed.remove(task.tid());
      }
    }

    @Override
    public void handleNotification(Notification notification, Object handback) {
      if (!GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION.equals(
          notification.getType())) {
        return;
      }
      GarbageCollectionNotificationInfo info =
          GarbageCollectionNotificationInfo.from((CompositeData) notification.getUserData());
      long after = 0;
      for (Map.Entry<String, MemoryUsage> pool :
          info.getGcInfo().getMemoryUsageAfterGc().entrySet()) {
        if (heapPools.contains(pool.getKey())) {
          after += pool.getValue().getUsed();
        }
      }
      boolean major = info.getGcAction().contains("major");
      if (heap.over(after, major)) {
        blame(
            String.format(
                "heap after garbage collection %d MiB of %d MiB, over the limit of %d MiB (%.0f %%)",
                after / MIB, maxHeap / MIB, heap.limit() / MIB, limits.heapFraction() * 100));
        heap.reset();
      }
    }

    private void watchResident() {
      Path status = Path.of("/proc/self/status");
      while (!stopped) {
        try {
          Thread.sleep(1_000);
          long resident = residentBytes(Files.readString(status, StandardCharsets.UTF_8));
          if (resident > limits.rssBytes()) {
            blame(
                String.format(
                    "resident memory %d MiB, over the limit of %d MiB",
                    resident / MIB, limits.rssBytes() / MIB));
          }
        } catch (InterruptedException e) {
          return;
        } catch (IOException | RuntimeException e) {
          System.err.println(MARK + ": cannot read the resident memory: " + e);
          return;
        }
      }
    }

    /** Blame the task that allocated the most (none while a blamed one still runs). */
    synchronized void blame(String why) {
      if (!Collections.disjoint(blamed, tidsRunning())) {
        return; // its memory is not free yet
      }
      blamed.clear();
      Running task =
          culprit(
              running.values(), this::allocatedSinceStart, (long) (maxHeap * limits.minShare()));
      if (task == null) {
        long now = System.nanoTime();
        if (now - lastUnblamed > UNBLAMED_EVERY_NANOS || lastUnblamed == 0) {
          lastUnblamed = now; // said once a minute at most
          System.err.println(MARK + " " + why + "; no running task allocated enough to be blamed");
        }
        return;
      }
      String connector = task.pool() == null ? "-" : task.pool();
      String reason =
          String.format(
              "Sluice's memory watch stopped connector %s: %s; its task %d (stage %d) had "
                  + "allocated %d MiB since it started, the most of the %d running",
              connector,
              why,
              task.tid(),
              task.stage(),
              allocatedSinceStart(task) / MIB,
              running.size());
      blamed.add(task.tid());
      Verdict verdict = new Verdict(task.stage(), task.tid(), connector, reason);
      try {
        pluginContext.send(verdict.text());
      } catch (IOException | RuntimeException e) {
        System.err.println(verdict.line() + " (not delivered to the driver: " + e + ")");
      }
    }

    private Set<Long> tidsRunning() {
      Set<Long> tids = new HashSet<>();
      for (Running task : running.values()) {
        tids.add(task.tid());
      }
      return tids;
    }

    private long allocatedSinceStart(Running task) {
      long now = threads.getThreadAllocatedBytes(task.thread());
      return now < 0 ? 0 : now - task.allocatedAtStart();
    }
  }
}
