package io.sluice.spark;

import io.sluice.spark.patterns.LiteralCache;
import io.sluice.spark.protobuf.ProtoDecoder;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * {@code protobuf_decode(value BINARY, plan STRING) -> VARIANT}: a Kafka record value in
 * Confluent's Protobuf wire format decoded with the schema its id names, NULL when it is not in the
 * format, its id is not in the plan or it does not decode. {@code plan} (the schemas by id) is
 * written by {@code pipelines.wire} and compiled once per distinct literal: {@link ProtoDecoder}.
 */
public final class ProtobufDecodeFunction extends SimpleFunction<VariantVal> {
  private static final long serialVersionUID = 1L;
  private static final LiteralCache<ProtoDecoder> PLANS =
      new LiteralCache<>("protobuf_decode's plan", ProtoDecoder::compile);

  public ProtobufDecodeFunction() {
    super("protobuf_decode", VARIANT, DataTypes.BinaryType, STRING);
  }

  public static VariantVal invoke(byte[] value, UTF8String plan) {
    if (value == null) {
      return null;
    }
    return PLANS.get(plan).decode(value);
  }
}
