package io.sluice.bench.peers;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * A peer's temporary directory (Kafka Streams' state directory, Flink's checkpoints), removed when
 * the JVM ends: the bench stops a throughput run with SIGTERM and starts dozens of runs, which
 * would otherwise leave a directory each.
 */
final class ScratchDir {
  private ScratchDir() {}

  /** A new directory that a shutdown hook deletes. */
  static Path create(String prefix) throws IOException {
    Path dir = Files.createTempDirectory(prefix);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> delete(dir)));
    return dir;
  }

  /** Deletes {@code dir} and everything under it, as far as it can (best effort at exit). */
  static void delete(Path dir) {
    try (Stream<Path> paths = Files.walk(dir)) {
      paths.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
    } catch (IOException | UncheckedIOException e) {
      // gone already, or a file went away while walking: nothing left to do at exit
    }
  }
}
