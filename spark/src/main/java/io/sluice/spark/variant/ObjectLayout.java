package io.sluice.spark.variant;

import java.util.Arrays;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.types.variant.VariantUtil;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Where the parts of the VARIANT object at {@code pos} lie (its header decoded once): its fields'
 * ids, their values, and their keys' bytes in the metadata dictionary.
 */
public final class ObjectLayout {
  /** Objects of up to this many fields are searched in order, larger ones by binary search. */
  public static final int LINEAR_SEARCH_FIELDS = 32;

  /** The number of fields. */
  public final int size;

  private final byte[] value;
  private final byte[] metadata;
  private final int idSize;
  private final int offsetSize;
  private final int idStart;
  private final int offsetStart;
  private final int dataStart;
  private final int metaOffsetSize;
  private final int stringStart;

  /** The layout of the object whose header byte is {@code value[pos]}. */
  public ObjectLayout(byte[] value, byte[] metadata, int pos) {
    int typeInfo = (value[pos] & 0xFF) >> VariantUtil.BASIC_TYPE_BITS;
    boolean large = ((typeInfo >> 4) & 0x1) != 0;
    int sizeBytes = large ? VariantUtil.U32_SIZE : 1;
    this.value = value;
    this.metadata = metadata;
    idSize = ((typeInfo >> 2) & 0x3) + 1;
    offsetSize = (typeInfo & 0x3) + 1;
    size = VariantUtil.readUnsigned(value, pos + 1, sizeBytes);
    idStart = pos + 1 + sizeBytes;
    offsetStart = idStart + size * idSize;
    dataStart = offsetStart + (size + 1) * offsetSize;
    metaOffsetSize = ((metadata[0] >> 6) & 0x3) + 1;
    int dictionarySize = VariantUtil.readUnsigned(metadata, 1, metaOffsetSize);
    stringStart = 1 + (dictionarySize + 2) * metaOffsetSize;
  }

  /** The dictionary id of field {@code i}'s key. */
  public int id(int i) {
    return VariantUtil.readUnsigned(value, idStart + idSize * i, idSize);
  }

  /** Where the key of dictionary id {@code id} starts in the metadata (id + 1: ends). */
  public int keyStart(int id) {
    return stringStart
        + VariantUtil.readUnsigned(metadata, 1 + (id + 1) * metaOffsetSize, metaOffsetSize);
  }

  /** Where field {@code i}'s value starts in the value bytes. */
  public int valueAt(int i) {
    return dataStart + VariantUtil.readUnsigned(value, offsetStart + offsetSize * i, offsetSize);
  }

  /**
   * Where the member {@code key} of the object at the start of {@code value} begins, or -1 when the
   * value is not an object or has no such member. Objects of up to {@value #LINEAR_SEARCH_FIELDS}
   * fields are searched by comparing key bytes against the metadata dictionary (no string is
   * decoded); larger ones by a binary search over their sorted keys, as {@link
   * Variant#getFieldByKey} does.
   */
  public static int fieldPosition(byte[] value, byte[] metadata, UTF8String key) {
    if ((value[0] & VariantUtil.BASIC_TYPE_MASK) != VariantUtil.OBJECT) {
      return -1;
    }
    ObjectLayout object = new ObjectLayout(value, metadata, 0);
    if (object.size > LINEAR_SEARCH_FIELDS) {
      // Field ids are sorted by their keys (Java string order): a binary search, as
      // Variant.getFieldByKey does, decoding one key per probe.
      String wanted = key.toString();
      int low = 0;
      int high = object.size - 1;
      while (low <= high) {
        int mid = (low + high) >>> 1;
        int order = VariantUtil.getMetadataKey(metadata, object.id(mid)).compareTo(wanted);
        if (order == 0) {
          return object.valueAt(mid);
        }
        if (order < 0) {
          low = mid + 1;
        } else {
          high = mid - 1;
        }
      }
      return -1;
    }
    byte[] keyBytes = key.getBytes();
    for (int i = 0; i < object.size; i++) {
      int id = object.id(i);
      int from = object.keyStart(id);
      int to = object.keyStart(id + 1);
      if (to - from == keyBytes.length
          && Arrays.equals(metadata, from, to, keyBytes, 0, keyBytes.length)) {
        return object.valueAt(i);
      }
    }
    return -1;
  }
}
