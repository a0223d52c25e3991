package io.sluice.spark.protobuf;

import com.google.protobuf.AnyProto;
import com.google.protobuf.ApiProto;
import com.google.protobuf.DescriptorProtos;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.DescriptorValidationException;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DurationProto;
import com.google.protobuf.EmptyProto;
import com.google.protobuf.FieldMaskProto;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.SourceContextProto;
import com.google.protobuf.StructProto;
import com.google.protobuf.TimestampProto;
import com.google.protobuf.TypeProto;
import com.google.protobuf.WrappersProto;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Protobuf schemas as Sluice's registry stores them (a base64 serialized {@code
 * FileDescriptorProto} per file, its references' files named by their reference names) built into
 * protobuf-java's descriptors, and Confluent's message indexes (a message's path in its file's tree
 * of messages).
 */
public final class ProtoFiles {
  /** The well-known types: protobuf-java has them built in (google/protobuf/*.proto). */
  private static final Map<String, FileDescriptor> WELL_KNOWN = wellKnown();

  /** The most message indexes a record may name (a deeper path is not a real schema). */
  static final int MAX_INDEXES = 100;

  private ProtoFiles() {}

  private static Map<String, FileDescriptor> wellKnown() {
    Map<String, FileDescriptor> files = new HashMap<>();
    for (FileDescriptor file :
        List.of(
            AnyProto.getDescriptor(),
            ApiProto.getDescriptor(),
            DescriptorProtos.getDescriptor(),
            DurationProto.getDescriptor(),
            EmptyProto.getDescriptor(),
            FieldMaskProto.getDescriptor(),
            SourceContextProto.getDescriptor(),
            StructProto.getDescriptor(),
            TimestampProto.getDescriptor(),
            TypeProto.getDescriptor(),
            WrappersProto.getDescriptor())) {
      files.put(file.getName(), file);
    }
    return files;
  }

  /**
   * The first file of {@code base64Files} built with its imports: the other files (by name) or the
   * well-known types; IllegalArgumentException when one is missing or a file does not build.
   */
  public static FileDescriptor build(List<String> base64Files) {
    if (base64Files.isEmpty()) {
      throw new IllegalArgumentException("a Protobuf schema needs at least one file");
    }
    Map<String, FileDescriptorProto> protos = new LinkedHashMap<>();
    String main = null;
    for (String text : base64Files) {
      FileDescriptorProto proto;
      try {
        proto = FileDescriptorProto.parseFrom(Base64.getDecoder().decode(text));
      } catch (InvalidProtocolBufferException | IllegalArgumentException e) {
        throw new IllegalArgumentException("not a base64 FileDescriptorProto: " + e.getMessage());
      }
      if (main == null) {
        main = proto.getName();
      }
      protos.putIfAbsent(proto.getName(), proto);
    }
    return resolve(main, protos, new HashMap<>(), new HashSet<>());
  }

  private static FileDescriptor resolve(
      String name,
      Map<String, FileDescriptorProto> protos,
      Map<String, FileDescriptor> built,
      Set<String> visiting) {
    FileDescriptor known = WELL_KNOWN.get(name);
    if (known != null) {
      return known;
    }
    FileDescriptor done = built.get(name);
    if (done != null) {
      return done;
    }
    FileDescriptorProto proto = protos.get(name);
    if (proto == null) {
      throw new IllegalArgumentException(
          "import " + name + " is neither a reference of the schema nor a well-known type");
    }
    if (!visiting.add(name)) {
      throw new IllegalArgumentException("import cycle through " + name);
    }
    FileDescriptor[] dependencies = new FileDescriptor[proto.getDependencyCount()];
    for (int i = 0; i < dependencies.length; i++) {
      dependencies[i] = resolve(proto.getDependency(i), protos, built, visiting);
    }
    try {
      FileDescriptor file = FileDescriptor.buildFrom(proto, dependencies);
      built.put(name, file);
      return file;
    } catch (DescriptorValidationException e) {
      throw new IllegalArgumentException("file " + name + " does not build: " + e.getMessage());
    }
  }

  /** Every message type of {@code file} and of the files it imports, by full name. */
  public static Map<String, Descriptor> messageTypes(FileDescriptor file) {
    Map<String, Descriptor> types = new HashMap<>();
    addFile(file, types, new HashSet<>());
    return types;
  }

  private static void addFile(
      FileDescriptor file, Map<String, Descriptor> types, Set<String> seen) {
    if (!seen.add(file.getName())) {
      return;
    }
    for (Descriptor message : file.getMessageTypes()) {
      addMessage(message, types);
    }
    for (FileDescriptor dependency : file.getDependencies()) {
      addFile(dependency, types, seen);
    }
  }

  private static void addMessage(Descriptor message, Map<String, Descriptor> types) {
    types.putIfAbsent(message.getFullName(), message);
    for (Descriptor nested : message.getNestedTypes()) {
      addMessage(nested, types);
    }
  }

  /** The message of {@code file} that {@code indexes} name (NULL when there is none). */
  public static Descriptor message(FileDescriptor file, int[] indexes) {
    if (indexes.length == 0) {
      return null;
    }
    List<Descriptor> level = file.getMessageTypes();
    Descriptor message = null;
    for (int index : indexes) {
      if (index < 0 || index >= level.size()) {
        return null;
      }
      message = level.get(index);
      level = message.getNestedTypes();
    }
    return message;
  }

  /** The message indexes of {@code message} in its file (outermost first). */
  public static int[] indexes(Descriptor message) {
    List<Integer> path = new ArrayList<>();
    for (Descriptor at = message; at != null; at = at.getContainingType()) {
      path.add(0, at.getIndex());
    }
    return path.stream().mapToInt(Integer::intValue).toArray();
  }

  /**
   * Confluent's wire-format header of a Protobuf record: magic byte 0, the schema id (4 bytes,
   * big-endian), then the message indexes: the single byte 0 for [0] (the file's first message),
   * else their count and each index, as zigzag varints.
   */
  public static byte[] header(int schemaId, int[] indexes) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(8);
    out.write(0);
    out.write(schemaId >>> 24);
    out.write(schemaId >>> 16);
    out.write(schemaId >>> 8);
    out.write(schemaId);
    if (indexes.length == 1 && indexes[0] == 0) {
      out.write(0);
    } else {
      writeZigzag(out, indexes.length);
      for (int index : indexes) {
        writeZigzag(out, index);
      }
    }
    return out.toByteArray();
  }

  private static void writeZigzag(ByteArrayOutputStream out, long value) {
    long v = (value << 1) ^ (value >> 63);
    while ((v & ~0x7FL) != 0) {
      out.write((int) ((v & 0x7F) | 0x80));
      v >>>= 7;
    }
    out.write((int) v);
  }

  /**
   * The message indexes at {@code pos[0]} of {@code bytes} (a count of 0 means [0]), {@code pos[0]}
   * moved past them; NULL when they are cut short or out of bounds.
   */
  public static int[] readIndexes(byte[] bytes, int[] pos) {
    long count = readZigzag(bytes, pos);
    if (count == 0) {
      return new int[] {0};
    }
    if (count < 0 || count > MAX_INDEXES) {
      return null;
    }
    int[] indexes = new int[(int) count];
    for (int i = 0; i < indexes.length; i++) {
      long index = readZigzag(bytes, pos);
      if (index < 0 || index > Integer.MAX_VALUE) {
        return null;
      }
      indexes[i] = (int) index;
    }
    return indexes;
  }

  /** A zigzag varint; -1 when it is cut short or longer than 10 bytes (pos past the end). */
  private static long readZigzag(byte[] bytes, int[] pos) {
    long raw = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (pos[0] >= bytes.length) {
        pos[0] = bytes.length + 1;
        return -1;
      }
      byte b = bytes[pos[0]++];
      raw |= (long) (b & 0x7F) << shift;
      if (b >= 0) {
        return (raw >>> 1) ^ -(raw & 1);
      }
    }
    pos[0] = bytes.length + 1;
    return -1;
  }
}
