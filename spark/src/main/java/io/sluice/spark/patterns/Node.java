package io.sluice.spark.patterns;

import static io.sluice.spark.variant.VariantBytes.basicType;
import static io.sluice.spark.variant.VariantBytes.isLeaf;
import static io.sluice.spark.variant.VariantBytes.member;

import org.apache.spark.types.variant.VariantUtil;

/** Steps below one field value ({@code _node_steps}). */
final class Node {
  /** Paths of the absence steps before the first value step: no element has a leaf there. */
  private final byte[][][] absent;

  /** The other steps, which must hold inside one element; null when there are none. */
  private final Element pinned;

  Node(byte[][][] absent, Element pinned) {
    this.absent = absent;
    this.pinned = pinned;
  }

  /** Whether the steps hold below the value at {@code pos} ({@code -1}: missing). */
  boolean test(byte[] v, byte[] m, int pos) {
    for (byte[][] path : absent) {
      if (hasLeaf(v, m, pos, path, 0)) {
        return false;
      }
    }
    return pinned == null || pinned.inSomeElement(v, m, pos);
  }

  /** Whether a leaf lies at {@code path[i:]} below the value at {@code pos}, in any element. */
  static boolean hasLeaf(byte[] v, byte[] m, int pos, byte[][] path, int i) {
    if (pos >= 0 && basicType(v, pos) == VariantUtil.ARRAY) {
      return crushedHasLeaf(v, m, pos, path, i, EventPatterns.MAX_ARRAY_NESTING - 1);
    }
    return elementHasLeaf(v, m, pos, path, i);
  }

  private static boolean crushedHasLeaf(
      byte[] v, byte[] m, int array, byte[][] path, int i, int depth) {
    int typeInfo = (v[array] & 0xFF) >> VariantUtil.BASIC_TYPE_BITS;
    int sizeBytes = ((typeInfo >> 2) & 0x1) != 0 ? VariantUtil.U32_SIZE : 1;
    int offsetSize = (typeInfo & 0x3) + 1;
    int count = VariantUtil.readUnsigned(v, array + 1, sizeBytes);
    int offsets = array + 1 + sizeBytes;
    int data = offsets + (count + 1) * offsetSize;
    for (int k = 0; k < count; k++) {
      int at = data + VariantUtil.readUnsigned(v, offsets + k * offsetSize, offsetSize);
      boolean found =
          depth > 0 && basicType(v, at) == VariantUtil.ARRAY
              ? crushedHasLeaf(v, m, at, path, i, depth - 1)
              : elementHasLeaf(v, m, at, path, i);
      if (found) {
        return true;
      }
    }
    return false;
  }

  private static boolean elementHasLeaf(byte[] v, byte[] m, int pos, byte[][] path, int i) {
    if (i == path.length) {
      return isLeaf(v, pos);
    }
    return hasLeaf(v, m, member(v, m, pos, path[i]), path, i + 1);
  }
}
