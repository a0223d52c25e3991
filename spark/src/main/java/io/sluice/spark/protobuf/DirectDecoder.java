package io.sluice.spark.protobuf;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.OneofDescriptor;
import com.google.protobuf.UnsafeByteOperations;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.types.variant.VariantBuilder;

/**
 * Reads a message's wire bytes straight into a VARIANT builder (no {@code DynamicMessage}, no boxed
 * field map): what {@link ProtoDecoder}'s general path writes, for the common shapes. Anything it
 * does not handle the same way (a singular message field that occurs twice and must be merged, two
 * members of one oneof, a wire type a field does not expect, a proto2 required field, a group, a
 * closed enum's unknown value, text that is not UTF-8, the JSON-valued well-known types, a
 * truncated record) throws {@link Fallback}, and the record is read again by the general path,
 * which decides.
 */
final class DirectDecoder {
  /** The record needs the general path. */
  static final class Fallback extends RuntimeException {
    private static final long serialVersionUID = 1L;
    static final Fallback INSTANCE = new Fallback();

    private Fallback() {
      super("fallback", null, false, false);
    }
  }

  private static final Fallback FALLBACK = Fallback.INSTANCE;
  private static final int MAX_DEPTH = 100;
  private static final Set<String> GENERAL_ONLY =
      Set.of(
          "google.protobuf.Struct",
          "google.protobuf.Value",
          "google.protobuf.ListValue",
          "google.protobuf.FieldMask",
          "google.protobuf.Any");

  /** A message type's fields by number, computed once per type. */
  static final class TypeInfo {
    final Descriptor type;
    final FieldDescriptor[] fields;
    final String name;
    private final int[] byNumber;
    private final Map<Integer, Integer> byLargeNumber = new HashMap<>();

    TypeInfo(Descriptor type) {
      this.type = type;
      this.name = type.getFullName();
      this.fields = type.getFields().toArray(new FieldDescriptor[0]);
      int max = 0;
      for (FieldDescriptor field : fields) {
        if (field.getNumber() <= 1024) {
          max = Math.max(max, field.getNumber());
        }
      }
      byNumber = new int[max + 1];
      Arrays.fill(byNumber, -1);
      for (int i = 0; i < fields.length; i++) {
        int number = fields[i].getNumber();
        if (number <= 1024) {
          byNumber[number] = i;
        } else {
          byLargeNumber.put(number, i);
        }
      }
    }

    int index(int number) {
      if (number < byNumber.length) {
        return byNumber[number];
      }
      Integer found = byLargeNumber.get(number);
      return found == null ? -1 : found;
    }
  }

  private final Map<Descriptor, TypeInfo> infos;
  private final VariantBuilder b;
  private final ProtoDecoder.Writer writer;
  private final byte[] buf;
  private int p;

  DirectDecoder(
      Map<Descriptor, TypeInfo> infos, VariantBuilder b, ProtoDecoder.Writer writer, byte[] buf) {
    this.infos = infos;
    this.b = b;
    this.writer = writer;
    this.buf = buf;
  }

  static Map<Descriptor, TypeInfo> newInfos() {
    return new ConcurrentHashMap<>();
  }

  private TypeInfo info(Descriptor type) {
    TypeInfo info = infos.get(type);
    if (info == null) {
      info = new TypeInfo(type);
      infos.put(type, info);
    }
    return info;
  }

  /** Writes the message {@code type} in {@code buf[from, to)}. */
  void message(Descriptor type, int from, int to, int depth) {
    if (depth > MAX_DEPTH) {
      throw FALLBACK;
    }
    TypeInfo t = info(type);
    if (t.name.startsWith("google.protobuf.") && wellKnown(t, from, to)) {
      return;
    }
    int n = t.fields.length;
    int[] last = new int[n];
    int[] counts = new int[n];
    int[] occ = new int[16]; // (field index, wire type, start) per occurrence
    int occN = 0;
    p = from;
    while (p < to) {
      long tag = varint(to);
      int number = (int) (tag >>> 3);
      int wire = (int) (tag & 7);
      if (number <= 0 || tag >>> 32 != 0) {
        throw FALLBACK;
      }
      int start = p;
      skip(wire, to);
      int index = t.index(number);
      if (index >= 0) {
        if (occN + 3 > occ.length) {
          occ = Arrays.copyOf(occ, occ.length * 2);
        }
        occ[occN] = index;
        occ[occN + 1] = wire;
        occ[occN + 2] = start;
        last[index] = occN;
        counts[index]++;
        occN += 3;
      }
    }
    if (p != to) {
      throw FALLBACK;
    }
    int objectStart = b.getWritePos();
    ArrayList<VariantBuilder.FieldEntry> entries = new ArrayList<>(n);
    long oneofs = 0; // the oneofs a member of which occurs
    for (int i = 0; i < n; i++) {
      FieldDescriptor field = t.fields[i];
      if (field.isRequired() || field.getType() == FieldDescriptor.Type.GROUP) {
        throw FALLBACK;
      }
      OneofDescriptor oneof = field.getRealContainingOneof();
      if (oneof != null && counts[i] > 0) {
        long bit = 1L << Math.min(oneof.getIndex(), 63);
        if ((oneofs & bit) != 0 || oneof.getIndex() >= 63) {
          throw FALLBACK; // two members of a oneof: the last one clears the others
        }
        oneofs |= bit;
      }
      if (counts[i] == 0) {
        if (!field.isRepeated() && field.hasPresence()) {
          continue;
        }
        key(field.getName(), objectStart, entries);
        if (field.isMapField()) {
          b.finishWritingObject(b.getWritePos(), new ArrayList<>());
        } else if (field.isRepeated()) {
          b.finishWritingArray(b.getWritePos(), new ArrayList<>());
        } else {
          writer.scalar(field, field.getDefaultValue());
        }
        continue;
      }
      key(field.getName(), objectStart, entries);
      if (field.isMapField()) {
        map(field, occ, occN, i, depth);
      } else if (field.isRepeated()) {
        repeated(field, occ, occN, i, depth);
      } else {
        if (counts[i] > 1 && field.getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
          throw FALLBACK; // occurrences of a message field merge
        }
        int o = last[i];
        value(field, occ[o + 1], occ[o + 2], depth);
      }
    }
    b.finishWritingObject(objectStart, entries);
  }

  private void key(String name, int start, ArrayList<VariantBuilder.FieldEntry> entries) {
    entries.add(new VariantBuilder.FieldEntry(name, b.addKey(name), b.getWritePos() - start));
  }

  private void repeated(FieldDescriptor field, int[] occ, int occN, int index, int depth) {
    int arrayStart = b.getWritePos();
    ArrayList<Integer> offsets = new ArrayList<>();
    boolean packable = field.isPackable();
    for (int o = 0; o < occN; o += 3) {
      if (occ[o] != index) {
        continue;
      }
      int wire = occ[o + 1];
      int start = occ[o + 2];
      if (packable && wire == 2) {
        p = start;
        int length = length();
        int from = p;
        int end = from + length;
        int elementWire = packedWire(field);
        int at = from;
        while (at < end) {
          offsets.add(b.getWritePos() - arrayStart);
          at = value(field, elementWire, at, depth);
        }
        if (at != end) {
          throw FALLBACK;
        }
      } else {
        offsets.add(b.getWritePos() - arrayStart);
        value(field, wire, start, depth);
      }
    }
    b.finishWritingArray(arrayStart, offsets);
  }

  private static int packedWire(FieldDescriptor field) {
    switch (field.getType()) {
      case FIXED32:
      case SFIXED32:
      case FLOAT:
        return 5;
      case FIXED64:
      case SFIXED64:
      case DOUBLE:
        return 1;
      default:
        return 0;
    }
  }

  private void map(FieldDescriptor field, int[] occ, int occN, int index, int depth) {
    TypeInfo entry = info(field.getMessageType());
    FieldDescriptor keyField = entry.fields[entry.index(1)];
    FieldDescriptor valueField = entry.fields[entry.index(2)];
    int objectStart = b.getWritePos();
    ArrayList<VariantBuilder.FieldEntry> entries = new ArrayList<>();
    for (int o = 0; o < occN; o += 3) {
      if (occ[o] != index) {
        continue;
      }
      if (occ[o + 1] != 2) {
        throw FALLBACK;
      }
      p = occ[o + 2];
      int length = length();
      int from = p;
      int to = from + length;
      int keyWire = -1;
      int keyStart = 0;
      int valueWire = -1;
      int valueStart = 0;
      int valueCount = 0;
      p = from;
      while (p < to) {
        long tag = varint(to);
        int wire = (int) (tag & 7);
        int start = p;
        skip(wire, to);
        if (tag >>> 3 == 1) {
          keyWire = wire;
          keyStart = start;
        } else if (tag >>> 3 == 2) {
          valueWire = wire;
          valueStart = start;
          valueCount++;
        }
      }
      if (p != to) {
        throw FALLBACK;
      }
      String keyText;
      if (keyWire < 0) {
        keyText = ProtoDecoder.Writer.mapKey(keyField, keyField.getDefaultValue());
      } else {
        keyText = ProtoDecoder.Writer.mapKey(keyField, scalar(keyField, keyWire, keyStart));
      }
      key(keyText, objectStart, entries);
      if (valueWire < 0) {
        if (valueField.getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
          message(valueField.getMessageType(), to, to, depth + 1); // an empty message
        } else {
          writer.scalar(valueField, valueField.getDefaultValue());
        }
      } else {
        if (valueCount > 1 && valueField.getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
          throw FALLBACK;
        }
        value(valueField, valueWire, valueStart, depth);
      }
    }
    b.finishWritingObject(objectStart, entries); // a repeated key: the last one wins
  }

  /** Writes one value of {@code field} whose bytes start at {@code start}; returns its end. */
  private int value(FieldDescriptor field, int wire, int start, int depth) {
    switch (field.getType()) {
      case MESSAGE:
        {
          expect(wire, 2);
          p = start;
          int length = length();
          int from = p;
          message(field.getMessageType(), from, from + length, depth + 1);
          return from + length;
        }
      case STRING:
        {
          expect(wire, 2);
          p = start;
          int length = length();
          if (!UnsafeByteOperations.unsafeWrap(buf, p, length).isValidUtf8()) {
            throw FALLBACK;
          }
          b.appendString(new String(buf, p, length, StandardCharsets.UTF_8));
          return p + length;
        }
      case BYTES:
        {
          expect(wire, 2);
          p = start;
          int length = length();
          ByteBuffer encoded = Base64.getEncoder().encode(ByteBuffer.wrap(buf, p, length));
          b.appendString(StandardCharsets.ISO_8859_1.decode(encoded).toString());
          return p + length;
        }
      default:
        Object scalar = scalar(field, wire, start);
        writer.scalar(field, scalar);
        return p;
    }
  }

  /** A scalar field's value as {@code DynamicMessage} holds it; {@code p} moves past it. */
  private Object scalar(FieldDescriptor field, int wire, int start) {
    p = start;
    switch (field.getType()) {
      case INT32:
      case UINT32:
        expect(wire, 0);
        return (int) varint(buf.length);
      case INT64:
      case UINT64:
        expect(wire, 0);
        return varint(buf.length);
      case SINT32:
        {
          expect(wire, 0);
          int v = (int) varint(buf.length);
          return (v >>> 1) ^ -(v & 1);
        }
      case SINT64:
        {
          expect(wire, 0);
          long v = varint(buf.length);
          return (v >>> 1) ^ -(v & 1);
        }
      case BOOL:
        expect(wire, 0);
        return varint(buf.length) != 0;
      case ENUM:
        {
          expect(wire, 0);
          int number = (int) varint(buf.length);
          EnumDescriptor type = field.getEnumType();
          EnumValueDescriptor found = type.findValueByNumber(number);
          if (found == null) {
            if (type.isClosed()) {
              throw FALLBACK; // an unknown field there
            }
            found = type.findValueByNumberCreatingIfUnknown(number);
          }
          return found;
        }
      case FIXED32:
      case SFIXED32:
        expect(wire, 5);
        return fixed32();
      case FLOAT:
        expect(wire, 5);
        return Float.intBitsToFloat(fixed32());
      case FIXED64:
      case SFIXED64:
        expect(wire, 1);
        return fixed64();
      case DOUBLE:
        expect(wire, 1);
        return Double.longBitsToDouble(fixed64());
      case STRING:
        {
          expect(wire, 2);
          int length = length();
          if (!UnsafeByteOperations.unsafeWrap(buf, p, length).isValidUtf8()) {
            throw FALLBACK;
          }
          String text = new String(buf, p, length, StandardCharsets.UTF_8);
          p += length;
          return text;
        }
      default:
        throw FALLBACK; // bytes as a map key cannot be; messages and groups are not scalars
    }
  }

  /** Timestamp, Duration and the wrappers; false for the other well-known types' shapes. */
  private boolean wellKnown(TypeInfo t, int from, int to) {
    if (GENERAL_ONLY.contains(t.name)) {
      throw FALLBACK;
    }
    boolean time = t.name.equals("google.protobuf.Timestamp");
    boolean wrapper = ProtoDecoder.WRAPPERS.contains(t.name);
    if (!time && !wrapper && !t.name.equals("google.protobuf.Duration")) {
      return false;
    }
    long first = 0;
    long second = 0;
    int valueWire = -1;
    int valueStart = 0;
    p = from;
    while (p < to) {
      long tag = varint(to);
      int wire = (int) (tag & 7);
      int start = p;
      skip(wire, to);
      int number = (int) (tag >>> 3);
      if (wrapper && number == 1) {
        valueWire = wire;
        valueStart = start;
      } else if (!wrapper && (number == 1 || number == 2)) {
        expect(wire, 0);
        int end = p;
        p = start;
        long v = varint(to);
        p = end;
        if (number == 1) {
          first = v;
        } else {
          second = (int) v;
        }
      }
    }
    if (p != to) {
      throw FALLBACK;
    }
    if (wrapper) {
      FieldDescriptor value = t.fields[t.index(1)];
      if (valueWire < 0) {
        writer.scalar(value, value.getDefaultValue());
      } else {
        value(value, valueWire, valueStart, 0);
      }
    } else if (time) {
      b.appendString(ProtoDecoder.timestamp(first, (int) second));
    } else {
      b.appendString(ProtoDecoder.duration(first, (int) second));
    }
    return true;
  }

  private static void expect(int wire, int wanted) {
    if (wire != wanted) {
      throw FALLBACK;
    }
  }

  private long varint(int limit) {
    long result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= limit) {
        throw FALLBACK;
      }
      byte b = buf[p++];
      result |= (long) (b & 0x7F) << shift;
      if (b >= 0) {
        return result;
      }
    }
    throw FALLBACK;
  }

  private int length() {
    long length = varint(buf.length);
    if (length < 0 || length > buf.length - p) {
      throw FALLBACK;
    }
    return (int) length;
  }

  private int fixed32() {
    if (p + 4 > buf.length) {
      throw FALLBACK;
    }
    int v =
        (buf[p] & 0xFF)
            | (buf[p + 1] & 0xFF) << 8
            | (buf[p + 2] & 0xFF) << 16
            | (buf[p + 3] & 0xFF) << 24;
    p += 4;
    return v;
  }

  private long fixed64() {
    long low = fixed32() & 0xFFFFFFFFL;
    long high = fixed32() & 0xFFFFFFFFL;
    return low | high << 32;
  }

  private void skip(int wire, int limit) {
    switch (wire) {
      case 0:
        varint(limit);
        return;
      case 1:
        p += 8;
        break;
      case 2:
        {
          long length = varint(limit);
          if (length < 0 || length > limit - p) {
            throw FALLBACK;
          }
          p += (int) length;
          return;
        }
      case 5:
        p += 4;
        break;
      default:
        throw FALLBACK; // groups (3, 4) and invalid wire types
    }
    if (p > limit) {
      throw FALLBACK;
    }
  }
}
