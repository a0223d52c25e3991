package io.sluice.spark.patterns;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Function;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Programs compiled from constant text arguments (a pattern's steps, a bus's routes), once per
 * distinct text. Spark passes the same literal object on every row of a task, so each literal
 * object is looked up by identity in {@link #WAYS} slots from its identity hash (a task's literals
 * and those of the tasks running beside it rarely collide; a missing one evicts the slots in turn,
 * so two never keep evicting each other), else compiled or found by content and remembered there.
 */
public final class LiteralCache<T> {
  private static final int SLOTS = 1024;
  private static final int WAYS = 4;
  private static final int MAX_COMPILED = 4096;

  private final String what;
  private final Function<String, T> compiler;
  private final AtomicReferenceArray<Recent<T>> recent = new AtomicReferenceArray<>(SLOTS);
  private final AtomicInteger evictions = new AtomicInteger();
  private final Map<String, T> compiled = new ConcurrentHashMap<>();

  /** A literal object and its program (immutable: safely shared between threads). */
  private static final class Recent<T> {
    final UTF8String literal;
    final T program;

    Recent(UTF8String literal, T program) {
      this.literal = literal;
      this.program = program;
    }
  }

  public LiteralCache(String what, Function<String, T> compiler) {
    this.what = what;
    this.compiler = compiler;
  }

  /** The program of {@code text}; IllegalArgumentException when it is NULL or malformed. */
  public T get(UTF8String text) {
    if (text == null) {
      throw new IllegalArgumentException(what + " is NULL");
    }
    int start = System.identityHashCode(text);
    for (int way = 0; way < WAYS; way++) {
      Recent<T> hit = recent.get((start + way) & (SLOTS - 1));
      if (hit != null && hit.literal == text) {
        return hit.program;
      }
    }
    String key = text.toString();
    T program = compiled.get(key);
    if (program == null) {
      program = compiler.apply(key);
      if (compiled.size() >= MAX_COMPILED) {
        compiled.clear(); // programs are few; only a runaway caller gets here
      }
      compiled.put(key, program);
    }
    int slot = -1;
    for (int way = 0; way < WAYS && slot < 0; way++) {
      if (recent.get((start + way) & (SLOTS - 1)) == null) {
        slot = (start + way) & (SLOTS - 1);
      }
    }
    if (slot < 0) {
      slot = (start + (evictions.getAndIncrement() & (WAYS - 1))) & (SLOTS - 1);
    }
    recent.set(slot, new Recent<>(text, program));
    return program;
  }
}
