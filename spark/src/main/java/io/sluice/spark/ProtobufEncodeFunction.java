package io.sluice.spark;

import io.sluice.spark.patterns.LiteralCache;
import io.sluice.spark.protobuf.ProtoEncoder;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * {@code protobuf_encode(data VARIANT, plan STRING) -> BINARY}: an event's data as a Kafka record
 * value in Confluent's Protobuf wire format (magic byte, schema id, message indexes, message), NULL
 * when the data is NULL or does not fit the message. {@code plan} (the schema id, the message, the
 * files) is written by {@code pipelines.wire} and compiled once per distinct literal: {@link
 * ProtoEncoder}.
 */
public final class ProtobufEncodeFunction extends SimpleFunction<byte[]> {
  private static final long serialVersionUID = 1L;
  private static final LiteralCache<ProtoEncoder> PLANS =
      new LiteralCache<>("protobuf_encode's plan", ProtoEncoder::compile);

  public ProtobufEncodeFunction() {
    super("protobuf_encode", DataTypes.BinaryType, VARIANT, STRING);
  }

  public static byte[] invoke(VariantVal data, UTF8String plan) {
    if (data == null) {
      return null;
    }
    return PLANS.get(plan).encode(data);
  }
}
