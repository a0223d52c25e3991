package io.sluice.spark.protobuf;

import static io.sluice.spark.variant.Variants.val;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumDescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumValueDescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto.Label;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto.Type;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.MessageOptions;
import com.google.protobuf.DescriptorProtos.OneofDescriptorProto;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import io.sluice.spark.ProtobufDecodeFunction;
import io.sluice.spark.ProtobufEncodeFunction;
import io.sluice.spark.variant.Variants;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.unsafe.types.VariantVal;
import org.junit.jupiter.api.Test;

/**
 * Confluent's Protobuf wire format: message indexes, encode/decode round trips through the Spark
 * functions, the JSON mapping of each kind of field, and records that do not decode.
 */
class ProtobufWireTest {

  private static FieldDescriptorProto field(String name, int number, Type type) {
    return FieldDescriptorProto.newBuilder()
        .setName(name)
        .setNumber(number)
        .setType(type)
        .setLabel(Label.LABEL_OPTIONAL)
        .build();
  }

  private static FieldDescriptorProto typed(String name, int number, Type type, String typeName) {
    return field(name, number, type).toBuilder().setTypeName(typeName).build();
  }

  private static FieldDescriptorProto repeated(FieldDescriptorProto field) {
    return field.toBuilder().setLabel(Label.LABEL_REPEATED).build();
  }

  /** shop.proto: Order (every kind of field) and Other with a nested Inner; V2 adds a field. */
  private static FileDescriptorProto shop(boolean v2) {
    DescriptorProto.Builder order =
        DescriptorProto.newBuilder()
            .setName("Order")
            .addField(field("seq", 1, Type.TYPE_INT64))
            .addField(field("amount", 2, Type.TYPE_DOUBLE))
            .addField(typed("status", 3, Type.TYPE_ENUM, ".shop.Status"))
            .addField(repeated(field("tags", 4, Type.TYPE_STRING)))
            .addField(repeated(typed("counts", 5, Type.TYPE_MESSAGE, ".shop.Order.CountsEntry")))
            .addField(typed("line", 6, Type.TYPE_MESSAGE, ".shop.Order.Line"))
            .addField(typed("at", 7, Type.TYPE_MESSAGE, ".google.protobuf.Timestamp"))
            .addField(field("blob", 8, Type.TYPE_BYTES))
            .addField(
                field("note", 9, Type.TYPE_STRING).toBuilder()
                    .setProto3Optional(true)
                    .setOneofIndex(1))
            .addField(field("email", 16, Type.TYPE_STRING).toBuilder().setOneofIndex(0))
            .addField(field("phone", 17, Type.TYPE_STRING).toBuilder().setOneofIndex(0))
            .addField(typed("extra", 10, Type.TYPE_MESSAGE, ".google.protobuf.Struct"))
            .addField(field("big", 11, Type.TYPE_UINT64))
            .addField(field("ratio", 12, Type.TYPE_FLOAT))
            .addField(typed("wait", 13, Type.TYPE_MESSAGE, ".google.protobuf.Duration"))
            .addField(typed("maybe", 14, Type.TYPE_MESSAGE, ".google.protobuf.Int64Value"))
            .addOneofDecl(OneofDescriptorProto.newBuilder().setName("contact"))
            .addOneofDecl(OneofDescriptorProto.newBuilder().setName("_note"))
            .addNestedType(
                DescriptorProto.newBuilder()
                    .setName("CountsEntry")
                    .addField(field("key", 1, Type.TYPE_STRING))
                    .addField(field("value", 2, Type.TYPE_INT32))
                    .setOptions(MessageOptions.newBuilder().setMapEntry(true)))
            .addNestedType(
                DescriptorProto.newBuilder()
                    .setName("Line")
                    .addField(field("sku", 1, Type.TYPE_STRING))
                    .addField(field("qty", 2, Type.TYPE_UINT32)));
    if (v2) {
      order.addField(field("currency", 15, Type.TYPE_STRING));
    }
    return FileDescriptorProto.newBuilder()
        .setName("shop.proto")
        .setPackage("shop")
        .setSyntax("proto3")
        .addDependency("google/protobuf/timestamp.proto")
        .addDependency("google/protobuf/struct.proto")
        .addDependency("google/protobuf/duration.proto")
        .addDependency("google/protobuf/wrappers.proto")
        .addEnumType(
            EnumDescriptorProto.newBuilder()
                .setName("Status")
                .addValue(EnumValueDescriptorProto.newBuilder().setName("NEW").setNumber(0))
                .addValue(EnumValueDescriptorProto.newBuilder().setName("PAID").setNumber(1)))
        .addMessageType(order)
        .addMessageType(
            DescriptorProto.newBuilder()
                .setName("Other")
                .addField(field("name", 1, Type.TYPE_STRING))
                .addNestedType(
                    DescriptorProto.newBuilder()
                        .setName("Inner")
                        .addField(field("x", 1, Type.TYPE_SINT32))))
        .build();
  }

  private static String b64(FileDescriptorProto proto) {
    return Base64.getEncoder().encodeToString(proto.toByteArray());
  }

  private static UTF8String decodePlan(int id, FileDescriptorProto proto) {
    return UTF8String.fromString("{\"" + id + "\":[\"" + b64(proto) + "\"]}");
  }

  private static UTF8String encodePlan(int id, String message, FileDescriptorProto proto) {
    return UTF8String.fromString(
        "{\"id\":" + id + ",\"message\":\"" + message + "\",\"files\":[\"" + b64(proto) + "\"]}");
  }

  private static final String FULL =
      "{\"amount\":12.5,\"at\":\"2024-06-01T08:15:30.120Z\",\"big\":18446744073709551615,"
          + "\"blob\":\"AQID\",\"counts\":{\"a\":1,\"b\":2},\"extra\":{\"k\":[1.5,\"x\",null,true]},"
          + "\"line\":{\"qty\":4294967295,\"sku\":\"X-1\"},\"maybe\":9007199254740993,"
          + "\"note\":\"hi\",\"ratio\":0.1,\"seq\":9223372036854775807,\"status\":\"PAID\","
          + "\"tags\":[\"a\",\"b\"],\"wait\":\"1.500s\"}";

  @Test
  void headersAreConfluentsMessageIndexes() {
    assertArrayEquals(new byte[] {0, 0, 0, 0, 7, 0}, ProtoFiles.header(7, new int[] {0}));
    // [1, 0]: count 2 (zigzag 4), 1 (zigzag 2), 0
    assertArrayEquals(
        new byte[] {0, 0, 0, 1, 2, 4, 2, 0}, ProtoFiles.header(258, new int[] {1, 0}));
    int[] pos = {0};
    assertArrayEquals(new int[] {0}, ProtoFiles.readIndexes(new byte[] {0}, pos));
    pos[0] = 0;
    assertArrayEquals(new int[] {1, 0}, ProtoFiles.readIndexes(new byte[] {4, 2, 0}, pos));
    assertEquals(3, pos[0]);
    pos[0] = 0;
    assertNull(ProtoFiles.readIndexes(new byte[] {4, 2}, pos)); // cut short
    pos[0] = 0;
    assertNull(ProtoFiles.readIndexes(new byte[] {3}, pos)); // a negative count
  }

  @Test
  void everyKindOfFieldRoundTrips() {
    byte[] record = ProtobufEncodeFunction.invoke(val(FULL), encodePlan(5, "", shop(false)));
    assertNotNull(record);
    assertArrayEquals(new byte[] {0, 0, 0, 0, 5, 0}, Arrays.copyOf(record, 6));
    VariantVal back = ProtobufDecodeFunction.invoke(record, decodePlan(5, shop(false)));
    assertEquals(FULL, back.toString());
  }

  @Test
  void fieldsWithoutPresenceGetTheirDefaults() {
    byte[] record = ProtobufEncodeFunction.invoke(val("{}"), encodePlan(5, "", shop(false)));
    assertEquals(
        "{\"amount\":0.0,\"big\":0,\"blob\":\"\",\"counts\":{},\"ratio\":0.0,\"seq\":0,"
            + "\"status\":\"NEW\",\"tags\":[]}",
        ProtobufDecodeFunction.invoke(record, decodePlan(5, shop(false))).toString());
  }

  @Test
  void aNestedMessageIsNamedByItsIndexes() throws Exception {
    FileDescriptor file = ProtoFiles.build(List.of(b64(shop(false))));
    Descriptor inner = file.findMessageTypeByName("Other").getNestedTypes().get(0);
    assertArrayEquals(new int[] {1, 0}, ProtoFiles.indexes(inner));
    byte[] record =
        ProtobufEncodeFunction.invoke(
            val("{\"x\":-3}"), encodePlan(9, "shop.Other.Inner", shop(false)));
    assertArrayEquals(new byte[] {0, 0, 0, 0, 9, 4, 2, 0}, Arrays.copyOf(record, 8));
    DynamicMessage parsed =
        DynamicMessage.parseFrom(inner, Arrays.copyOfRange(record, 8, record.length));
    assertEquals(-3, parsed.getField(inner.findFieldByName("x")));
    assertEquals(
        "{\"x\":-3}", ProtobufDecodeFunction.invoke(record, decodePlan(9, shop(false))).toString());
  }

  @Test
  void aWriterWithAnAddedFieldReadsWithItsOwnSchemaAndUnknownFieldsAreSkipped() {
    UTF8String plan =
        UTF8String.fromString(
            "{\"1\":[\"" + b64(shop(false)) + "\"],\"2\":[\"" + b64(shop(true)) + "\"]}");
    byte[] v2 =
        ProtobufEncodeFunction.invoke(
            val("{\"seq\":1,\"currency\":\"USD\"}"), encodePlan(2, "", shop(true)));
    assertTrue(ProtobufDecodeFunction.invoke(v2, plan).toString().contains("\"currency\":\"USD\""));
    byte[] asV1 = v2.clone();
    asV1[4] = 1; // the same bytes under version 1's id: the field is unknown there
    String read = ProtobufDecodeFunction.invoke(asV1, plan).toString();
    assertTrue(read.contains("\"seq\":1") && !read.contains("currency"), read);
  }

  @Test
  void recordsThatDoNotDecodeAreNull() {
    UTF8String plan = decodePlan(5, shop(false));
    byte[] good =
        ProtobufEncodeFunction.invoke(val("{\"seq\":300}"), encodePlan(5, "", shop(false)));
    assertNull(ProtobufDecodeFunction.invoke(Arrays.copyOf(good, good.length - 1), plan));
    byte[] unknownId = good.clone();
    unknownId[4] = 6;
    assertNull(ProtobufDecodeFunction.invoke(unknownId, plan));
    byte[] noMagic = good.clone();
    noMagic[0] = 1;
    assertNull(ProtobufDecodeFunction.invoke(noMagic, plan));
    assertNull(ProtobufDecodeFunction.invoke(new byte[] {0, 0, 0, 0, 5, 2, 8}, plan)); // [4]
    assertNull(ProtobufDecodeFunction.invoke(new byte[] {0, 0, 0, 0, 5}, plan));
    assertNull(ProtobufDecodeFunction.invoke(new byte[] {0, 0, 0, 0, 5, 0, (byte) 0xFF}, plan));
    assertNotNull(ProtobufDecodeFunction.invoke(good, plan));
  }

  /** deep.proto: Box holds a google.protobuf.Any (which may hold a Box, and so on). */
  private static FileDescriptorProto boxes() {
    return FileDescriptorProto.newBuilder()
        .setName("deep.proto")
        .setPackage("deep")
        .setSyntax("proto3")
        .addDependency("google/protobuf/any.proto")
        .addMessageType(
            DescriptorProto.newBuilder()
                .setName("Box")
                .addField(typed("inner", 1, Type.TYPE_MESSAGE, ".google.protobuf.Any"))
                .addField(field("n", 2, Type.TYPE_INT32)))
        .build();
  }

  /** A Box record (wire format, schema id 5) holding {@code levels} Boxes in Anys in Anys. */
  private static byte[] nestedBoxes(int levels) throws Exception {
    Descriptor box = ProtoFiles.build(List.of(b64(boxes()))).findMessageTypeByName("Box");
    Descriptor any = box.findFieldByName("inner").getMessageType();
    DynamicMessage current =
        DynamicMessage.newBuilder(box).setField(box.findFieldByName("n"), 1).build();
    for (int i = 0; i < levels; i++) {
      DynamicMessage wrapped =
          DynamicMessage.newBuilder(any)
              .setField(any.findFieldByName("type_url"), "type.googleapis.com/deep.Box")
              .setField(any.findFieldByName("value"), current.toByteString())
              .build();
      current =
          DynamicMessage.newBuilder(box).setField(box.findFieldByName("inner"), wrapped).build();
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(new byte[] {0, 0, 0, 0, 5, 0});
    current.writeTo(out);
    return out.toByteArray();
  }

  @Test
  void anyInAnyDeeperThanTheBudgetIsNullNeverAStackOverflow() throws Exception {
    // Issue 29 (finding 1): 3,000 levels (about 100 KB) overflowed the stack of the driver's
    // JVM and ended it (20,000 ran it out of memory). Each Any parses bytes of its own, so
    // Protobuf's recursion limit started again at every level.
    UTF8String plan = decodePlan(5, boxes());
    String shallow = ProtobufDecodeFunction.invoke(nestedBoxes(3), plan).toString();
    assertTrue(shallow.contains("\"@type\":\"type.googleapis.com/deep.Box\""), shallow);
    assertNotNull(ProtobufDecodeFunction.invoke(nestedBoxes(ProtoDecoder.MAX_DEPTH / 2 - 2), plan));
    for (int levels : new int[] {ProtoDecoder.MAX_DEPTH, 3_000}) {
      assertNull(ProtobufDecodeFunction.invoke(nestedBoxes(levels), plan), levels + " levels");
    }
  }

  @Test
  void dataThatDoesNotFitIsNull() {
    UTF8String plan = encodePlan(5, "", shop(false));
    assertNull(ProtobufEncodeFunction.invoke(val("{\"seq\":\"abc\"}"), plan));
    assertNull(ProtobufEncodeFunction.invoke(val("{\"line\":{\"qty\":-1}}"), plan));
    assertNull(ProtobufEncodeFunction.invoke(val("[1,2]"), plan));
    assertNull(ProtobufEncodeFunction.invoke(null, plan));
    // Members the message does not have are ignored; numbers may come as text.
    byte[] record = ProtobufEncodeFunction.invoke(val("{\"seq\":\"42\",\"nope\":{\"a\":1}}"), plan);
    String read = ProtobufDecodeFunction.invoke(record, decodePlan(5, shop(false))).toString();
    assertTrue(read.contains("\"seq\":42"), read);
  }

  @Test
  void specialNumbersAndUnknownEnumValues() throws Exception {
    FileDescriptor file = ProtoFiles.build(List.of(b64(shop(false))));
    Descriptor order = file.findMessageTypeByName("Order");
    DynamicMessage message =
        DynamicMessage.newBuilder(order)
            .setField(order.findFieldByName("amount"), Double.NaN)
            .setField(order.findFieldByName("ratio"), Float.NEGATIVE_INFINITY)
            .setField(
                order.findFieldByName("status"),
                order.findFieldByName("status").getEnumType().findValueByNumberCreatingIfUnknown(7))
            .setField(order.findFieldByName("blob"), ByteString.copyFromUtf8("é"))
            .build();
    byte[] header = ProtoFiles.header(5, new int[] {0});
    byte[] body = message.toByteArray();
    byte[] record = Arrays.copyOf(header, header.length + body.length);
    System.arraycopy(body, 0, record, header.length, body.length);
    String read = ProtobufDecodeFunction.invoke(record, decodePlan(5, shop(false))).toString();
    assertTrue(read.contains("\"amount\":\"NaN\""), read);
    assertTrue(read.contains("\"ratio\":\"-Infinity\""), read);
    assertTrue(read.contains("\"status\":7"), read);
    assertTrue(read.contains("\"blob\":\"w6k=\""), read);
  }

  @Test
  void theDirectReaderWritesWhatTheGeneralOneDoes() throws Exception {
    ProtoDecoder decoder = ProtoDecoder.compile(decodePlan(5, shop(false)).toString());
    UTF8String plan = encodePlan(5, "", shop(false));
    String noStruct = FULL.replace("\"extra\":{\"k\":[1.5,\"x\",null,true]},", "");
    List<byte[]> records = new ArrayList<>();
    records.add(ProtobufEncodeFunction.invoke(val(FULL), plan)); // Struct: the general path
    records.add(ProtobufEncodeFunction.invoke(val(noStruct), plan));
    records.add(ProtobufEncodeFunction.invoke(val("{}"), plan));
    // A message field twice (merged), repeated values between other fields, a field unknown to
    // the schema, a scalar twice (the last wins).
    Descriptor line =
        ProtoFiles.build(List.of(b64(shop(false))))
            .findMessageTypeByName("Order")
            .findFieldByName("line")
            .getMessageType();
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    body.write(ProtoFiles.header(5, new int[] {0}));
    CodedOutputStream out = CodedOutputStream.newInstance(body);
    out.writeByteArray(
        6,
        DynamicMessage.newBuilder(line)
            .setField(line.findFieldByName("sku"), "a")
            .build()
            .toByteArray());
    out.writeString(4, "t1");
    out.writeInt64(1, 5);
    out.writeString(4, "t2");
    out.writeByteArray(
        6,
        DynamicMessage.newBuilder(line)
            .setField(line.findFieldByName("qty"), 3)
            .build()
            .toByteArray());
    out.writeString(99, "unknown");
    out.writeInt64(1, 7);
    out.flush();
    records.add(body.toByteArray());
    // Two members of one oneof: the last one clears the other.
    ByteArrayOutputStream twice = new ByteArrayOutputStream();
    twice.write(ProtoFiles.header(5, new int[] {0}));
    CodedOutputStream contact = CodedOutputStream.newInstance(twice);
    contact.writeString(16, "a@example.com");
    contact.writeString(17, "+1 555");
    contact.flush();
    records.add(twice.toByteArray());
    for (byte[] record : records) {
      assertEquals(
          decoder.decode(record, false).toString(), decoder.decode(record, true).toString());
    }
    assertEquals(noStruct, decoder.decode(records.get(1), true).toString());
    String merged = decoder.decode(records.get(3), true).toString();
    assertTrue(merged.contains("\"line\":{\"qty\":3,\"sku\":\"a\"}"), merged);
    assertTrue(merged.contains("\"seq\":7") && merged.contains("\"tags\":[\"t1\",\"t2\"]"), merged);
    String oneof = decoder.decode(records.get(4), true).toString();
    assertTrue(oneof.contains("\"phone\":\"+1 555\"") && !oneof.contains("email"), oneof);
  }

  @Test
  void theDirectWriterWritesWhatTheJsonMappingReads() {
    ProtoEncoder encoder = ProtoEncoder.compile(encodePlan(5, "", shop(false)).toString());
    ProtoDecoder decoder = ProtoDecoder.compile(decodePlan(5, shop(false)).toString());
    String[] docs = {
      FULL,
      "{\"seq\":1,\"amount\":2,\"status\":\"PAID\",\"tags\":[\"a\"],\"counts\":{\"k\":3},"
          + "\"line\":{\"sku\":\"s\",\"qty\":4},\"blob\":\"AQID\",\"note\":\"\",\"ratio\":1.5,"
          + "\"other\":[1]}",
      "{\"seq\":\"7\",\"status\":1}", // text for a number, a number for an enum: JsonFormat
      "{\"seq\":1.0,\"big\":9223372036854775807}",
    };
    assertNotNull(
        new DirectEncoder().encode(Variants.json(docs[1]), encoder.type())); // no fallback
    for (String doc : docs) {
      byte[] direct = encoder.encode(val(doc), true);
      byte[] general = encoder.encode(val(doc), false);
      assertEquals(
          decoder.decode(general, false).toString(), decoder.decode(direct, true).toString(), doc);
    }
  }

  @Test
  void wellKnownTypesTextForms() {
    assertEquals("1970-01-01T00:00:01Z", ProtoDecoder.timestamp(1, 0));
    assertEquals("1970-01-01T00:00:01.000001Z", ProtoDecoder.timestamp(1, 1000));
    assertEquals("-1.500s", ProtoDecoder.duration(-1, -500_000_000));
    assertEquals("0.000000001s", ProtoDecoder.duration(0, 1));
    assertEquals("fooBar.baz", ProtoDecoder.lowerCamel("foo_bar.baz"));
  }

  @Test
  void aPlanWithAMissingImportOrMessageIsRefused() {
    FileDescriptorProto lonely =
        shop(false).toBuilder().setDependency(0, "elsewhere.proto").build();
    IllegalArgumentException missing =
        assertThrows(IllegalArgumentException.class, () -> ProtoFiles.build(List.of(b64(lonely))));
    assertTrue(missing.getMessage().contains("elsewhere.proto"), missing.getMessage());
    IllegalArgumentException noMessage =
        assertThrows(
            IllegalArgumentException.class,
            () -> ProtoEncoder.compile(encodePlan(5, "shop.Nope", shop(false)).toString()));
    assertTrue(noMessage.getMessage().contains("shop.Nope"));
  }
}
