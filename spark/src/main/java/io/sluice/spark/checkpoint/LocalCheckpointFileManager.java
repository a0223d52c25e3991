package io.sluice.spark.checkpoint;

import java.io.BufferedOutputStream;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager;

/**
 * The checkpoint file manager of Sluice's sessions ({@code
 * spark.sql.streaming.checkpointFileManagerClass}): Spark's file-system based one, which writes a
 * log file to a temporary file and renames it into place, with one change on the local file system:
 * the temporary file is written by Java's own file stream, without Hadoop's checksum file beside it
 * and without setting its permission.
 *
 * <p>Why: without Hadoop's native library (pyspark ships none) the local file system sets a new
 * file's permission by running {@code chmod} in a child process, for the file and again for its
 * {@code .crc}; and Spark's default manager (the {@code FileContext} one) runs {@code readlink} for
 * each path it renames. A micro-batch writes two log files (offsets, then commits), so every batch
 * of every channel forked five to ten processes from the driver's JVM: 40 and 80 ms of a batch of
 * 180 on an idle 2-core machine, a third of the latency of a channel at a steady rate. A local
 * file's rename is atomic, which is all the log needs; a file's permissions follow the process's
 * umask, as any file it creates. Other file systems (HDFS, S3A) get Spark's behaviour unchanged.
 */
public class LocalCheckpointFileManager extends FileSystemBasedCheckpointFileManager {
  private static final int BUFFER_BYTES = 4096;

  public LocalCheckpointFileManager(Path path, Configuration hadoopConf) {
    super(path, hadoopConf);
  }

  @Override
  public FSDataOutputStream createTempFile(Path path) {
    if (!(fs() instanceof LocalFileSystem local)) {
      return super.createTempFile(path);
    }
    File file = local.pathToFile(path);
    try {
      // Java's own stream: Hadoop's would set the file's permission with a chmod process.
      return new FSDataOutputStream(
          new BufferedOutputStream(new FileOutputStream(file), BUFFER_BYTES), null);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create checkpoint file " + file, e);
    }
  }
}
