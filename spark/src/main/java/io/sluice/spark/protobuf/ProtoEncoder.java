package io.sluice.spark.protobuf;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import io.sluice.spark.variant.JsonWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * Encodes an event's data (a VARIANT) as a record in Confluent's Protobuf wire format: magic byte,
 * schema id, the message's indexes, the message. Compiled once per plan: the JSON text {@code
 * {"id": <schema id>, "message": "<full name>" or "", "files": ["<base64 FileDescriptorProto>",
 * ...]}}, the first file being the schema, the others its references; an empty message name means
 * the file's first message.
 *
 * <p>The data is read as Protobuf's JSON mapping reads JSON (protobuf-java-util's {@code
 * JsonFormat}: proto or JSON field names, integers as numbers or text, enums by name or number,
 * bytes as base64, the well-known types' JSON forms, Any with "@type" from the schema's types), so
 * what {@link ProtoDecoder} writes reads back the same. Members the message does not have are
 * ignored; a value of the wrong type, a value out of range or a missing proto2 required field makes
 * the data not fit (NULL). Plain data is written by {@link DirectEncoder} (straight to the wire
 * bytes); {@code JsonFormat} reads the rest.
 */
public final class ProtoEncoder {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Descriptor type;
  private final byte[] header;
  private final JsonFormat.Parser parser;
  private final DirectEncoder direct = new DirectEncoder();

  private ProtoEncoder(Descriptor type, byte[] header, JsonFormat.Parser parser) {
    this.type = type;
    this.header = header;
    this.parser = parser;
  }

  /** The encoder of a plan (see the class comment); IllegalArgumentException when malformed. */
  public static ProtoEncoder compile(String plan) {
    JsonNode root;
    try {
      root = JSON.readTree(plan);
    } catch (IOException e) {
      throw new IllegalArgumentException("protobuf_encode's plan is not JSON: " + e.getMessage());
    }
    if (root == null || !root.isObject() || !root.path("id").canConvertToInt()) {
      throw new IllegalArgumentException("protobuf_encode's plan needs an id, a message, files");
    }
    List<String> texts = new ArrayList<>();
    root.path("files").forEach(text -> texts.add(text.asText()));
    FileDescriptor file = ProtoFiles.build(texts);
    String name = root.path("message").asText("");
    Descriptor type;
    if (name.isEmpty()) {
      if (file.getMessageTypes().isEmpty()) {
        throw new IllegalArgumentException("the schema " + file.getName() + " has no message");
      }
      type = file.getMessageTypes().get(0);
    } else {
      type = ProtoFiles.messageTypes(file).get(name);
      if (type == null || type.getFile() != file) {
        throw new IllegalArgumentException(
            "the schema " + file.getName() + " has no message " + name);
      }
    }
    JsonFormat.TypeRegistry registry = JsonFormat.TypeRegistry.newBuilder().add(type).build();
    JsonFormat.Parser parser =
        JsonFormat.parser().ignoringUnknownFields().usingTypeRegistry(registry);
    byte[] header = ProtoFiles.header(root.path("id").asInt(), ProtoFiles.indexes(type));
    return new ProtoEncoder(type, header, parser);
  }

  /** The message this encoder writes. */
  public Descriptor type() {
    return type;
  }

  /** The record value of {@code data}; NULL when it is NULL or does not fit the message. */
  public byte[] encode(VariantVal data) {
    return encode(data, true);
  }

  /** {@link #encode(VariantVal)}; {@code direct}: first try {@link DirectEncoder} (tests). */
  byte[] encode(VariantVal data, boolean direct) {
    if (data == null) {
      return null;
    }
    byte[] value = data.getValue();
    byte[] metadata = data.getMetadata();
    if (direct) {
      try {
        return withHeader(this.direct.encode(new Variant(value, metadata), type));
      } catch (DirectDecoder.Fallback fallback) {
        // the JSON mapping's parser decides
      }
    }
    JsonWriter out = new JsonWriter(value.length + 64);
    String json;
    if (out.value(value, metadata, 0)) {
      byte[] text = out.result().getBytes();
      json = new String(text, StandardCharsets.UTF_8);
    } else {
      json = new Variant(value, metadata).toJson(ZoneOffset.UTC);
    }
    try {
      DynamicMessage.Builder builder = DynamicMessage.newBuilder(type);
      parser.merge(json, builder);
      return withHeader(builder.build().toByteArray());
    } catch (InvalidProtocolBufferException | RuntimeException e) {
      return null; // not an object, a wrong type, out of range, a required field missing
    }
  }

  private byte[] withHeader(byte[] body) {
    byte[] record = new byte[header.length + body.length];
    System.arraycopy(header, 0, record, 0, header.length);
    System.arraycopy(body, 0, record, header.length, body.length);
    return record;
  }
}
