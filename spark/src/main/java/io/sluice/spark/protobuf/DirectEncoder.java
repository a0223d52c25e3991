package io.sluice.spark.protobuf;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.OneofDescriptor;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.math.BigDecimal;
import java.util.Base64;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.types.variant.VariantUtil;

/**
 * Writes an event's data (a VARIANT object) as a message's wire bytes directly, for the plain
 * cases: members that name fields (proto or JSON names), values of exactly their field's kind. What
 * it does not write exactly as the JSON mapping's parser would (a number as text, an unknown enum
 * name, a well-known type, a proto2 required field, a oneof set twice, a value of another kind)
 * throws {@link DirectDecoder.Fallback}, and {@link ProtoEncoder} reads the data with {@code
 * JsonFormat}, which decides.
 */
final class DirectEncoder {
  private static final DirectDecoder.Fallback FALLBACK = DirectDecoder.Fallback.INSTANCE;
  private static final int MAX_DEPTH = 100;

  /** A message type's fields by proto and JSON name. */
  private static final class TypeInfo {
    final Map<String, FieldDescriptor> byName = new HashMap<>();
    final boolean plain;

    TypeInfo(Descriptor type) {
      boolean ok = !type.getFullName().startsWith("google.protobuf.");
      for (FieldDescriptor field : type.getFields()) {
        byName.put(field.getName(), field);
        byName.putIfAbsent(field.getJsonName(), field);
        ok &= !field.isRequired() && field.getType() != FieldDescriptor.Type.GROUP;
      }
      plain = ok;
    }
  }

  private final Map<Descriptor, TypeInfo> infos = new ConcurrentHashMap<>();

  private TypeInfo info(Descriptor type) {
    TypeInfo info = infos.get(type);
    if (info == null) {
      info = new TypeInfo(type);
      infos.put(type, info);
    }
    return info;
  }

  /** The wire bytes of {@code data} as {@code type}. */
  byte[] encode(Variant data, Descriptor type) {
    try {
      return message(data, type, 0);
    } catch (IOException e) {
      throw FALLBACK;
    }
  }

  private byte[] message(Variant data, Descriptor type, int depth) throws IOException {
    if (depth > MAX_DEPTH || data.getType() != VariantUtil.Type.OBJECT) {
      throw FALLBACK;
    }
    TypeInfo t = info(type);
    if (!t.plain) {
      throw FALLBACK;
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(64);
    CodedOutputStream out = CodedOutputStream.newInstance(bytes);
    Set<Integer> seen = null;
    int n = data.objectSize();
    for (int i = 0; i < n; i++) {
      Variant.ObjectField member = data.getFieldAtIndex(i);
      FieldDescriptor field = t.byName.get(member.key);
      if (field == null) {
        continue; // the message has no such field: ignored
      }
      Variant value = member.value;
      if (value.getType() == VariantUtil.Type.NULL) {
        throw FALLBACK;
      }
      OneofDescriptor oneof = field.getRealContainingOneof();
      if (seen == null) {
        seen = new HashSet<>();
      }
      if (!seen.add(field.getNumber()) || (oneof != null && !seen.add(-1 - oneof.getIndex()))) {
        throw FALLBACK; // a field twice (proto and JSON name), a oneof set twice
      }
      if (field.isMapField()) {
        map(out, field, value, depth);
      } else if (field.isRepeated()) {
        if (value.getType() != VariantUtil.Type.ARRAY) {
          throw FALLBACK;
        }
        for (int e = 0; e < value.arraySize(); e++) {
          single(out, field, value.getElementAtIndex(e), depth);
        }
      } else {
        single(out, field, value, depth);
      }
    }
    out.flush();
    return bytes.toByteArray();
  }

  private void map(CodedOutputStream out, FieldDescriptor field, Variant value, int depth)
      throws IOException {
    Descriptor entry = field.getMessageType();
    FieldDescriptor keyField = entry.findFieldByNumber(1);
    FieldDescriptor valueField = entry.findFieldByNumber(2);
    if (value.getType() != VariantUtil.Type.OBJECT
        || keyField.getType() != FieldDescriptor.Type.STRING) {
      throw FALLBACK;
    }
    for (int i = 0; i < value.objectSize(); i++) {
      Variant.ObjectField member = value.getFieldAtIndex(i);
      if (member.value.getType() == VariantUtil.Type.NULL) {
        throw FALLBACK;
      }
      ByteArrayOutputStream bytes = new ByteArrayOutputStream(32);
      CodedOutputStream pair = CodedOutputStream.newInstance(bytes);
      pair.writeString(1, member.key);
      single(pair, valueField, member.value, depth);
      pair.flush();
      out.writeByteArray(field.getNumber(), bytes.toByteArray());
    }
  }

  private void single(CodedOutputStream out, FieldDescriptor field, Variant value, int depth)
      throws IOException {
    int number = field.getNumber();
    switch (field.getType()) {
      case INT32:
        out.writeInt32(number, (int) integer(value, Integer.MIN_VALUE, Integer.MAX_VALUE));
        break;
      case SINT32:
        out.writeSInt32(number, (int) integer(value, Integer.MIN_VALUE, Integer.MAX_VALUE));
        break;
      case SFIXED32:
        out.writeSFixed32(number, (int) integer(value, Integer.MIN_VALUE, Integer.MAX_VALUE));
        break;
      case UINT32:
        out.writeUInt32(number, (int) integer(value, 0, 0xFFFFFFFFL));
        break;
      case FIXED32:
        out.writeFixed32(number, (int) integer(value, 0, 0xFFFFFFFFL));
        break;
      case INT64:
        out.writeInt64(number, integer(value, Long.MIN_VALUE, Long.MAX_VALUE));
        break;
      case SINT64:
        out.writeSInt64(number, integer(value, Long.MIN_VALUE, Long.MAX_VALUE));
        break;
      case SFIXED64:
        out.writeSFixed64(number, integer(value, Long.MIN_VALUE, Long.MAX_VALUE));
        break;
      case UINT64:
        out.writeUInt64(number, integer(value, 0, Long.MAX_VALUE));
        break;
      case FIXED64:
        out.writeFixed64(number, integer(value, 0, Long.MAX_VALUE));
        break;
      case BOOL:
        if (value.getType() != VariantUtil.Type.BOOLEAN) {
          throw FALLBACK;
        }
        out.writeBool(number, value.getBoolean());
        break;
      case FLOAT:
        {
          double d = real(value);
          if (Math.abs(d) > Float.MAX_VALUE) {
            throw FALLBACK;
          }
          out.writeFloat(number, (float) d);
          break;
        }
      case DOUBLE:
        out.writeDouble(number, real(value));
        break;
      case STRING:
        out.writeString(number, text(value));
        break;
      case BYTES:
        try {
          out.writeByteArray(number, Base64.getDecoder().decode(text(value)));
        } catch (IllegalArgumentException e) {
          throw FALLBACK;
        }
        break;
      case ENUM:
        {
          EnumValueDescriptor found = field.getEnumType().findValueByName(text(value));
          if (found == null) {
            throw FALLBACK;
          }
          out.writeEnum(number, found.getNumber());
          break;
        }
      case MESSAGE:
        out.writeByteArray(number, message(value, field.getMessageType(), depth + 1));
        break;
      default:
        throw FALLBACK;
    }
  }

  private static long integer(Variant value, long min, long max) {
    long v;
    switch (value.getType()) {
      case LONG:
        v = value.getLong();
        break;
      case DECIMAL:
        try {
          v = value.getDecimal().longValueExact();
        } catch (ArithmeticException e) {
          throw FALLBACK;
        }
        break;
      default:
        throw FALLBACK;
    }
    if (v < min || v > max) {
      throw FALLBACK;
    }
    return v;
  }

  private static double real(Variant value) {
    switch (value.getType()) {
      case LONG:
        return value.getLong();
      case DOUBLE:
        return value.getDouble();
      case DECIMAL:
        {
          BigDecimal d = value.getDecimal();
          return d.doubleValue();
        }
      default:
        throw FALLBACK;
    }
  }

  private static String text(Variant value) {
    if (value.getType() != VariantUtil.Type.STRING) {
      throw FALLBACK;
    }
    return value.getString();
  }
}
