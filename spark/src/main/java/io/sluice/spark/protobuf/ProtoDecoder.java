package io.sluice.spark.protobuf;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.Message;
import java.io.IOException;
import java.math.BigDecimal;
import java.time.Instant;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.types.variant.VariantBuilder;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * Decodes records in Confluent's Protobuf wire format into VARIANT values, with the writer's schema
 * (the one the record's id names) and the message its indexes name. Compiled once per plan: the
 * JSON text {@code {"<schema id>": ["<base64 FileDescriptorProto>", ...], ...}}, each id's first
 * file being its schema, the others its references (named by their reference names).
 *
 * <p>How a message becomes a value (Protobuf's JSON mapping, with proto field names and numbers
 * kept as numbers): an object of its fields; a field with presence (a message, {@code optional}, a
 * oneof member, proto2) only when it is set, every other one always (its default when absent: 0,
 * "", false, the first enum value, [] or {}); 32- and 64-bit integers as integers (uint64 above
 * 2^63-1 as a decimal), float and double as doubles (NaN and the infinities as the strings "NaN",
 * "Infinity", "-Infinity"), bytes as base64 text, an enum as its value's name (an unknown number as
 * the number), a map as an object (keys as text), a repeated field as an array. Well-known types:
 * Timestamp as RFC 3339 text in UTC, Duration as "1.5s", the wrappers as their value, Struct, Value
 * and ListValue as the JSON they hold, FieldMask as its paths in lowerCamelCase joined by commas,
 * Empty as {}, Any as an object of its message's fields with "@type" (a well-known type under
 * "value"; a type the schema does not know: its bytes as base64 under "value"). Unknown fields are
 * skipped.
 *
 * <p>A record is first read by {@link DirectDecoder} (the wire bytes straight into the VARIANT);
 * what it does not handle is parsed into a {@code DynamicMessage} and written from there.
 *
 * <p>Messages nest at most {@link #MAX_DEPTH} levels in all, {@code Any} values included (each
 * {@code Any} is parsed from bytes of its own, so Protobuf's own recursion limit would start again
 * at every level): a deeper record is undecodable (NULL), as is any record whose decoding fails in
 * any way. Nothing a record holds may end the JVM every channel of the driver shares.
 */
public final class ProtoDecoder {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Levels of messages a record may nest, {@code Any} values included. */
  static final int MAX_DEPTH = 100;

  /** A record nested deeper than {@link #MAX_DEPTH}: it does not decode. */
  static final class TooDeep extends RuntimeException {
    private static final long serialVersionUID = 1L;

    TooDeep() {
      super("messages nest deeper than " + MAX_DEPTH + " levels", null, false, false);
    }
  }

  static final Set<String> WRAPPERS =
      Set.of(
          "google.protobuf.DoubleValue",
          "google.protobuf.FloatValue",
          "google.protobuf.Int64Value",
          "google.protobuf.UInt64Value",
          "google.protobuf.Int32Value",
          "google.protobuf.UInt32Value",
          "google.protobuf.BoolValue",
          "google.protobuf.StringValue",
          "google.protobuf.BytesValue");

  private final Map<Integer, FileDescriptor> files;
  private final Map<Integer, Map<String, Descriptor>> types;
  private final Map<Descriptor, DirectDecoder.TypeInfo> infos = DirectDecoder.newInfos();

  private ProtoDecoder(
      Map<Integer, FileDescriptor> files, Map<Integer, Map<String, Descriptor>> types) {
    this.files = files;
    this.types = types;
  }

  /** The decoder of a plan (see the class comment); IllegalArgumentException when malformed. */
  public static ProtoDecoder compile(String plan) {
    JsonNode root;
    try {
      root = JSON.readTree(plan);
    } catch (IOException e) {
      throw new IllegalArgumentException("protobuf_decode's plan is not JSON: " + e.getMessage());
    }
    if (root == null || !root.isObject()) {
      throw new IllegalArgumentException("protobuf_decode's plan must be a JSON object");
    }
    Map<Integer, FileDescriptor> files = new HashMap<>();
    Map<Integer, Map<String, Descriptor>> types = new HashMap<>();
    for (Map.Entry<String, JsonNode> entry : root.properties()) {
      int id;
      try {
        id = Integer.parseInt(entry.getKey());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("protobuf_decode's plan: not a schema id: " + entry);
      }
      List<String> texts = new ArrayList<>();
      entry.getValue().forEach(text -> texts.add(text.asText()));
      FileDescriptor file = ProtoFiles.build(texts);
      files.put(id, file);
      types.put(id, ProtoFiles.messageTypes(file));
    }
    return new ProtoDecoder(files, types);
  }

  /**
   * The record {@code value} (magic byte, schema id, message indexes, message) as a VARIANT; NULL
   * when it is not in the wire format, its id is not in the plan, its indexes name no message or
   * its message does not parse.
   */
  public VariantVal decode(byte[] value) {
    return decode(value, true);
  }

  /** {@link #decode(byte[])}; {@code direct}: first try {@link DirectDecoder} (tests compare). */
  VariantVal decode(byte[] value, boolean direct) {
    if (value == null || value.length < 6 || value[0] != 0) {
      return null;
    }
    int id =
        ((value[1] & 0xFF) << 24)
            | ((value[2] & 0xFF) << 16)
            | ((value[3] & 0xFF) << 8)
            | (value[4] & 0xFF);
    FileDescriptor file = files.get(id);
    if (file == null) {
      return null;
    }
    int[] pos = {5};
    int[] indexes = ProtoFiles.readIndexes(value, pos);
    if (indexes == null || pos[0] > value.length) {
      return null;
    }
    Descriptor type = ProtoFiles.message(file, indexes);
    if (type == null) {
      return null;
    }
    try {
      return decodeMessage(value, direct, type, types.get(id), pos[0]);
    } catch (StackOverflowError e) {
      return null; // (MAX_DEPTH keeps it from happening: never let one end the JVM)
    }
  }

  private VariantVal decodeMessage(
      byte[] value, boolean direct, Descriptor type, Map<String, Descriptor> known, int from) {
    int[] pos = {from};
    VariantBuilder builder = new VariantBuilder(true);
    try {
      if (!direct) {
        throw DirectDecoder.Fallback.INSTANCE;
      }
      new DirectDecoder(infos, builder, new Writer(builder, known), value)
          .message(type, pos[0], value.length, 0);
    } catch (DirectDecoder.Fallback fallback) {
      builder = new VariantBuilder(true);
      try {
        CodedInputStream input = CodedInputStream.newInstance(value, pos[0], value.length - pos[0]);
        input.setRecursionLimit(MAX_DEPTH);
        DynamicMessage message = DynamicMessage.parseFrom(type, input);
        new Writer(builder, known).message(message);
      } catch (IOException | RuntimeException e) {
        return null; // does not parse (or a Timestamp out of range): the record is undecodable
      }
    } catch (RuntimeException e) {
      return null; // a Timestamp out of range
    }
    Variant result = builder.result();
    return new VariantVal(result.getValue(), result.getMetadata());
  }

  /** Writes one message into a VARIANT builder. */
  static final class Writer {
    private final VariantBuilder b;
    private final Map<String, Descriptor> types;
    private int depth;

    /** Levels of messages being written: {@link #MAX_DEPTH} at most, Any values included. */
    Writer(VariantBuilder builder, Map<String, Descriptor> types) {
      this.b = builder;
      this.types = types;
    }

    void message(Message m) throws IOException {
      if (++depth > MAX_DEPTH) {
        throw new TooDeep();
      }
      try {
        Descriptor type = m.getDescriptorForType();
        if (wellKnown(m, type)) {
          return;
        }
        int start = b.getWritePos();
        ArrayList<VariantBuilder.FieldEntry> entries = new ArrayList<>();
        fields(m, type, start, entries);
        b.finishWritingObject(start, entries);
      } finally {
        depth--;
      }
    }

    private void key(String name, int start, ArrayList<VariantBuilder.FieldEntry> entries) {
      entries.add(new VariantBuilder.FieldEntry(name, b.addKey(name), b.getWritePos() - start));
    }

    private void fields(
        Message m, Descriptor type, int start, ArrayList<VariantBuilder.FieldEntry> entries)
        throws IOException {
      for (FieldDescriptor field : type.getFields()) {
        if (!field.isRepeated() && field.hasPresence() && !m.hasField(field)) {
          continue;
        }
        key(field.getName(), start, entries);
        if (field.isMapField()) {
          map(m, field);
        } else if (field.isRepeated()) {
          int arrayStart = b.getWritePos();
          ArrayList<Integer> offsets = new ArrayList<>();
          int count = m.getRepeatedFieldCount(field);
          for (int i = 0; i < count; i++) {
            offsets.add(b.getWritePos() - arrayStart);
            single(field, m.getRepeatedField(field, i));
          }
          b.finishWritingArray(arrayStart, offsets);
        } else {
          single(field, m.getField(field));
        }
      }
    }

    private void map(Message m, FieldDescriptor field) throws IOException {
      FieldDescriptor keyField = field.getMessageType().findFieldByNumber(1);
      FieldDescriptor valueField = field.getMessageType().findFieldByNumber(2);
      int start = b.getWritePos();
      ArrayList<VariantBuilder.FieldEntry> entries = new ArrayList<>();
      int count = m.getRepeatedFieldCount(field);
      for (int i = 0; i < count; i++) {
        Message entry = (Message) m.getRepeatedField(field, i);
        key(mapKey(keyField, entry.getField(keyField)), start, entries);
        single(valueField, entry.getField(valueField));
      }
      b.finishWritingObject(start, entries); // a repeated key: the last one wins
    }

    static String mapKey(FieldDescriptor field, Object key) {
      switch (field.getType()) {
        case UINT32:
        case FIXED32:
          return Integer.toUnsignedString((Integer) key);
        case UINT64:
        case FIXED64:
          return Long.toUnsignedString((Long) key);
        default:
          return String.valueOf(key);
      }
    }

    void single(FieldDescriptor field, Object value) throws IOException {
      if (field.getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
        message((Message) value);
      } else {
        scalar(field, value);
      }
    }

    /** A value of a field that is not a message or a group. */
    void scalar(FieldDescriptor field, Object value) {
      switch (field.getType()) {
        case INT32:
        case SINT32:
        case SFIXED32:
          b.appendLong((Integer) value);
          break;
        case UINT32:
        case FIXED32:
          b.appendLong(Integer.toUnsignedLong((Integer) value));
          break;
        case INT64:
        case SINT64:
        case SFIXED64:
          b.appendLong((Long) value);
          break;
        case UINT64:
        case FIXED64:
          long unsigned = (Long) value;
          if (unsigned >= 0) {
            b.appendLong(unsigned);
          } else {
            b.appendDecimal(new BigDecimal(Long.toUnsignedString(unsigned)));
          }
          break;
        case BOOL:
          b.appendBoolean((Boolean) value);
          break;
        case FLOAT:
          float f = (Float) value;
          if (Float.isFinite(f)) {
            b.appendDouble(Double.parseDouble(Float.toString(f))); // 0.1f is 0.1, not 0.100000001
          } else {
            b.appendString(nonFinite(f));
          }
          break;
        case DOUBLE:
          double d = (Double) value;
          if (Double.isFinite(d)) {
            b.appendDouble(d);
          } else {
            b.appendString(nonFinite(d));
          }
          break;
        case STRING:
          b.appendString((String) value);
          break;
        case BYTES:
          b.appendString(Base64.getEncoder().encodeToString(((ByteString) value).toByteArray()));
          break;
        case ENUM:
          EnumValueDescriptor e = (EnumValueDescriptor) value;
          if (field.getEnumType().getFullName().equals("google.protobuf.NullValue")) {
            b.appendNull();
          } else if (field.getEnumType().findValueByNumber(e.getNumber()) == null) {
            b.appendLong(e.getNumber()); // an open enum's value this schema does not name
          } else {
            b.appendString(e.getName());
          }
          break;
        default:
          throw new IllegalArgumentException("not a scalar field: " + field.getFullName());
      }
    }

    private static String nonFinite(double value) {
      return Double.isNaN(value) ? "NaN" : value > 0 ? "Infinity" : "-Infinity";
    }

    /** Writes a well-known type's JSON form; false when {@code type} is not one. */
    private boolean wellKnown(Message m, Descriptor type) throws IOException {
      String name = type.getFullName();
      if (!name.startsWith("google.protobuf.")) {
        return false;
      }
      if (WRAPPERS.contains(name)) {
        FieldDescriptor value = type.findFieldByNumber(1);
        single(value, m.getField(value));
        return true;
      }
      switch (name) {
        case "google.protobuf.Timestamp":
          b.appendString(timestamp(longField(m, 1), (int) intField(m, 2)));
          return true;
        case "google.protobuf.Duration":
          b.appendString(duration(longField(m, 1), (int) intField(m, 2)));
          return true;
        case "google.protobuf.Struct":
          map(m, type.findFieldByNumber(1));
          return true;
        case "google.protobuf.ListValue":
          {
            FieldDescriptor values = type.findFieldByNumber(1);
            int start = b.getWritePos();
            ArrayList<Integer> offsets = new ArrayList<>();
            for (int i = 0; i < m.getRepeatedFieldCount(values); i++) {
              offsets.add(b.getWritePos() - start);
              message((Message) m.getRepeatedField(values, i));
            }
            b.finishWritingArray(start, offsets);
            return true;
          }
        case "google.protobuf.Value":
          {
            FieldDescriptor kind = m.getOneofFieldDescriptor(type.getOneofs().get(0));
            if (kind == null) {
              b.appendNull();
            } else {
              single(kind, m.getField(kind));
            }
            return true;
          }
        case "google.protobuf.FieldMask":
          {
            FieldDescriptor paths = type.findFieldByNumber(1);
            StringBuilder text = new StringBuilder();
            for (int i = 0; i < m.getRepeatedFieldCount(paths); i++) {
              if (i > 0) {
                text.append(',');
              }
              text.append(lowerCamel((String) m.getRepeatedField(paths, i)));
            }
            b.appendString(text.toString());
            return true;
          }
        case "google.protobuf.Any":
          any(m, type);
          return true;
        default:
          return false;
      }
    }

    private static long longField(Message m, int number) {
      return (Long) m.getField(m.getDescriptorForType().findFieldByNumber(number));
    }

    private static long intField(Message m, int number) {
      return (Integer) m.getField(m.getDescriptorForType().findFieldByNumber(number));
    }

    private void any(Message m, Descriptor type) throws IOException {
      String url = (String) m.getField(type.findFieldByNumber(1));
      ByteString bytes = (ByteString) m.getField(type.findFieldByNumber(2));
      int start = b.getWritePos();
      ArrayList<VariantBuilder.FieldEntry> entries = new ArrayList<>();
      if (!url.isEmpty()) {
        key("@type", start, entries);
        b.appendString(url);
        Descriptor inner = types.get(url.substring(url.lastIndexOf('/') + 1));
        if (inner == null) {
          key("value", start, entries);
          b.appendString(Base64.getEncoder().encodeToString(bytes.toByteArray()));
        } else {
          // Parsed from bytes of its own: the recursion limit is what is left of the budget.
          CodedInputStream input = bytes.newCodedInput();
          input.setRecursionLimit(Math.max(MAX_DEPTH - depth, 0));
          DynamicMessage message = DynamicMessage.parseFrom(inner, input);
          if (inner.getFullName().startsWith("google.protobuf.")) {
            key("value", start, entries);
            message(message); // (counts its own level)
          } else {
            if (depth + 1 > MAX_DEPTH) {
              throw new TooDeep();
            }
            depth++; // its fields: one level deeper, in the Any's own object
            try {
              fields(message, inner, start, entries);
            } finally {
              depth--;
            }
          }
        }
      }
      b.finishWritingObject(start, entries);
    }
  }

  /** RFC 3339 in UTC with 0, 3, 6 or 9 fractional digits (Protobuf's JSON form). */
  static String timestamp(long seconds, int nanos) {
    return DateTimeFormatter.ISO_INSTANT.format(Instant.ofEpochSecond(seconds, nanos));
  }

  /** Seconds with 0, 3, 6 or 9 fractional digits and an "s" (Protobuf's JSON form). */
  static String duration(long seconds, int nanos) {
    StringBuilder text = new StringBuilder();
    if (seconds < 0 || nanos < 0) {
      text.append('-');
      seconds = -seconds;
      nanos = -nanos;
    }
    text.append(seconds);
    if (nanos != 0) {
      String fraction;
      if (nanos % 1_000_000 == 0) {
        fraction = String.format("%03d", nanos / 1_000_000);
      } else if (nanos % 1_000 == 0) {
        fraction = String.format("%06d", nanos / 1_000);
      } else {
        fraction = String.format("%09d", nanos);
      }
      text.append('.').append(fraction);
    }
    return text.append('s').toString();
  }

  /** A field path in lowerCamelCase, as FieldMask's JSON form writes it. */
  static String lowerCamel(String path) {
    StringBuilder text = new StringBuilder(path.length());
    boolean upper = false;
    for (int i = 0; i < path.length(); i++) {
      char c = path.charAt(i);
      if (c == '_') {
        upper = true;
      } else {
        text.append(upper ? Character.toUpperCase(c) : c);
        upper = false;
      }
    }
    return text.toString();
  }
}
